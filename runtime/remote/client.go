package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/graftland/graft/internal/cleartext"
	"github.com/graftland/graft/internal/privsock"
	"github.com/graftland/graft/internal/skew"
	"github.com/graftland/graft/runnerapi"
)

// RemoteError is a call to a runner that failed on the way: the runner
// could not be reached, the connection broke, or the session it belonged to
// was lost. Err is the client's error. Such calls are not retried, but
// for renewals (docs/semantics.md, "Runner sessions and leases").
type RemoteError struct {
	// Runner is the runner's name in the spec, or its address.
	Runner string
	// Op is what was asked, such as "start shop.api".
	Op  string
	Err error
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("RemoteError: %s on runner %s: %v", e.Op, e.Runner, e.Err)
}

func (e *RemoteError) Unwrap() error { return e.Err }

// APIError is an error answer of the runner: it was reached, and refused.
type APIError struct {
	Status int
	runnerapi.ErrorBody
}

func (e *APIError) Error() string { return e.ErrorBody.Error }

// PlaintextError is a client of a runner over plain TCP whose far end is
// beyond loopback: it would send the runner's token in the clear. Not a
// byte was sent.
type PlaintextError struct {
	// Runner is the runner's name in the spec; Address its address there;
	// Remote the address the connection reached.
	Runner, Address, Remote string
}

func (e *PlaintextError) Error() string {
	return fmt.Sprintf("runner %s at %s (reached %s): beyond loopback the runner's token crosses only TLS: add tls: {ca: FILE} to the runner's entry in plugins.yaml",
		e.Runner, e.Address, e.Remote)
}

// Hint tells the operator the way out, and its risk.
func (e *PlaintextError) Hint() string {
	return fmt.Sprintf("start the runner with --tls-cert and --tls-key and give its CA as runners.%s.tls.ca, or, on a network you trust with the token, set runners.%s.insecurePlaintext: true (and start the runner with --insecure-plaintext)", e.Runner, e.Runner)
}

// TLSRequiredError is a client over plain TCP of a runner that serves
// TLS. Its token was not sent.
type TLSRequiredError struct {
	// Runner is the runner's name in the spec; Address its address.
	Runner, Address string
}

func (e *TLSRequiredError) Error() string {
	return fmt.Sprintf("runner %s at %s serves TLS: add tls: {ca: FILE} to the runner's entry in plugins.yaml", e.Runner, e.Address)
}

// Hint tells the operator the way out.
func (e *TLSRequiredError) Hint() string {
	return fmt.Sprintf("give the CA that signed the runner's certificate as runners.%s.tls.ca (PEM)", e.Runner)
}

// client speaks the runner's HTTP API.
type client struct {
	name  string // for errors: the runner's name, or its address
	addr  string // the runner's address, as the spec has it
	base  string
	token string
	http  *http.Client
	// plain, for a client over plain TCP, holds whether the runner has
	// shown it speaks plain HTTP; until it has, the token is not sent.
	plain *cleartext.Probe
}

// maxAnswer bounds what is read of an answer of the runner.
const maxAnswer = 8 << 20

// newClient makes a client of the runner at cfg.Address: tcp://HOST:PORT,
// or unix:///PATH. With cfg.TLS, TCP connections use TLS. Over plain TCP
// the client sends the token only once the runner has shown it speaks
// plain HTTP (a first request without it), and, unless
// cfg.InsecurePlaintext, only to a loopback far end, which it checks on
// each connection, after the name is resolved (a *PlaintextError
// otherwise). Over a unix socket, it sends nothing to a listener that
// runs as another user (a *privsock.PeerError).
func newClient(cfg Config) (*client, error) {
	addr := cfg.Address
	tr := &http.Transport{
		// 12 keeps one for each of an apply's starts or stops at once
		// (10 by default), and a renewal besides: with fewer, the starts
		// of an apply close connections and dial new ones all along. A
		// runner's slots bound the requests it serves at once, not the
		// connections its clients keep idle (docs/security.md#listeners).
		MaxIdleConnsPerHost: 12,
		// Less than the runner's guard.DefaultIdleTimeout, so that the
		// client, not the runner, closes an idle connection.
		IdleConnTimeout:   time.Minute,
		ForceAttemptHTTP2: false,
	}
	self := skew.Peer{Version: skew.Version(), Protocol: runnerapi.Protocol}
	c := &client{name: cfg.Name, addr: addr, token: cfg.Token, http: &http.Client{Transport: skew.Transport(tr, self, nil)}}
	switch {
	case strings.HasPrefix(addr, "unix://"):
		path := strings.TrimPrefix(addr, "unix://")
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return privsock.Dial(ctx, path)
		}
		c.base = "http://runner"
	case strings.HasPrefix(addr, "tcp://"):
		hostport := strings.TrimPrefix(addr, "tcp://")
		if _, _, err := net.SplitHostPort(hostport); err != nil {
			return nil, fmt.Errorf("runner address %q: %w", addr, err)
		}
		c.base = "http://" + hostport
		if cfg.TLS != nil {
			tr.TLSClientConfig = cfg.TLS
			c.base = "https://" + hostport
			break
		}
		c.plain = &cleartext.Probe{}
		if !cfg.InsecurePlaintext {
			tr.DialContext = cleartext.LoopbackOnly(nil, func(remote string) error {
				return &PlaintextError{Runner: cfg.Name, Address: addr, Remote: remote}
			})
		}
	default:
		return nil, fmt.Errorf("runner address %q: want tcp://HOST:PORT or unix:///PATH", addr)
	}
	return c, nil
}

// call sends a request with a JSON body (nil: none) and decodes a 200
// answer into out (nil: discard). A runner that could not be reached is a
// *RemoteError; an error answer is an *APIError.
func (c *client) call(ctx context.Context, op, method, path string, in, out any) error {
	resp, err := c.send(ctx, op, method, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	switch {
	case err != nil:
		return &RemoteError{Runner: c.name, Op: op, Err: fmt.Errorf("read the answer: %w", err)}
	case len(b) > maxAnswer:
		return &RemoteError{Runner: c.name, Op: op, Err: fmt.Errorf("read the answer: it is over %d MiB", maxAnswer>>20)}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return &RemoteError{Runner: c.name, Op: op, Err: fmt.Errorf("read the answer: %w", err)}
	}
	return nil
}

// send sends a request and returns a 200 answer for the caller to read.
func (c *client) send(ctx context.Context, op, method, path string, in any) (*http.Response, error) {
	if err := c.plain.Do(ctx, c.http, c.base); err != nil {
		if errors.Is(err, cleartext.ErrServesTLS) {
			err = &TLSRequiredError{Runner: c.name, Address: c.addr}
		}
		return nil, c.failed(ctx, op, err)
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil || method == http.MethodPost {
		// Every POST, with a body or not: the runner refuses others.
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.failed(ctx, op, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	e := &APIError{Status: resp.StatusCode}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, runnerapi.MaxBody))
	if json.Unmarshal(b, &e.ErrorBody) != nil || e.ErrorBody.Error == "" {
		e.ErrorBody = runnerapi.ErrorBody{Error: fmt.Sprintf("%s: the runner answered %s", op, resp.Status), Kind: runnerapi.KindInternal}
	}
	return nil, e
}

// failed is the *RemoteError of op, whose request got no answer.
func (c *client) failed(ctx context.Context, op string, err error) error {
	var peer *privsock.PeerError
	var plain *PlaintextError
	switch {
	case errors.As(err, &peer):
		err = peer // it names the socket
	case errors.As(err, &plain):
		err = plain // it names the runner and the address reached
	}
	var lost *RemoteError
	if cause := context.Cause(ctx); errors.As(cause, &lost) {
		// The session was lost while this call was under way.
		err = fmt.Errorf("the session was lost: %s: %w", lost.Op, lost.Err)
	}
	return &RemoteError{Runner: c.name, Op: op, Err: err}
}

// close drops the client's idle connections.
func (c *client) close() { c.http.CloseIdleConnections() }
