package remote

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/graftland/graft/internal/privsock"
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

// client speaks the runner's HTTP API.
type client struct {
	name  string // for errors: the runner's name, or its address
	base  string
	token string
	http  *http.Client
}

// maxAnswer bounds what is read of an answer of the runner.
const maxAnswer = 8 << 20

// newClient makes a client of the runner at addr: tcp://HOST:PORT, or
// unix:///PATH. With tlsConf, TCP connections use TLS. Over a unix
// socket, the client sends nothing to a listener that runs as another
// user (a *privsock.PeerError).
func newClient(name, addr, token string, tlsConf *tls.Config) (*client, error) {
	tr := &http.Transport{
		// A runner serves a bounded number of connections at once
		// (guard.DefaultMaxConns), each host's idle ones included; 12
		// keeps one for each of an apply's starts or stops at once (10 by
		// default), and a renewal besides: with fewer, the starts of an
		// apply close connections and dial new ones all along.
		MaxIdleConnsPerHost: 12,
		// Less than the runner's guard.DefaultIdleTimeout, so that the
		// client, not the runner, closes an idle connection.
		IdleConnTimeout:   time.Minute,
		ForceAttemptHTTP2: false,
	}
	c := &client{name: name, token: token, http: &http.Client{Transport: tr}}
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
		if tlsConf != nil {
			tr.TLSClientConfig = tlsConf
			c.base = "https://" + hostport
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
		var peer *privsock.PeerError
		if errors.As(err, &peer) {
			err = peer // it names the socket
		}
		var lost *RemoteError
		if cause := context.Cause(ctx); errors.As(cause, &lost) {
			// The session was lost while this call was under way.
			err = fmt.Errorf("the session was lost: %s: %w", lost.Op, lost.Err)
		}
		return nil, &RemoteError{Runner: c.name, Op: op, Err: err}
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

// close drops the client's idle connections.
func (c *client) close() { c.http.CloseIdleConnections() }
