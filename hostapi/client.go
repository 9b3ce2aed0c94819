package hostapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/graftland/graft/internal/cleartext"
	"github.com/graftland/graft/internal/privsock"
	"github.com/graftland/graft/internal/skew"
)

// ErrNoHost is returned when no host answers on the state dir's socket.
var ErrNoHost = errors.New("no host is running")

// Client talks to the host of a state dir, or to a host over TCP.
type Client struct {
	dir   string // the state dir whose host's socket it dials; "" for TCP
	base  string // http://graft, or http://HOST:PORT
	token string // sent as a bearer token, over TCP
	http  *http.Client
	// plain, for a client over plain TCP, holds whether the far end has
	// shown it speaks plain HTTP; until it has, the token is not sent.
	plain *cleartext.Probe
	host  atomic.Pointer[skew.Peer] // the host's, as its last answer said (Host)
}

// NewClient returns a client of the host of state dir dir. It connects on
// each call, to the socket the state dir names then (SocketPath: a host
// started since may listen elsewhere); a host that is not running is
// ErrNoHost. It sends nothing through a socket whose listener runs as
// another user: that is a *privsock.PeerError.
func NewClient(dir string) (*Client, error) {
	if dir == "" {
		dir = "." // "" is a TCP client's
	}
	c := &Client{dir: dir, base: "http://graft"}
	c.http = &http.Client{Transport: skew.Transport(&http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			path, err := SocketPath(dir)
			if err != nil {
				return nil, err
			}
			return privsock.Dial(ctx, path)
		},
		DisableKeepAlives: true,
	}, self(), c.heard)}
	return c, nil
}

// Close releases the client's connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Ping reports whether a host answers, within timeout.
func (c *Client) Ping(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := c.Status(ctx)
	return err
}

// Status returns the host's report of itself and of what it runs.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	resp, err := c.do(ctx, http.MethodGet, "/v1/status", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var st Status
	if err := json.NewDecoder(limitAnswer(resp.Body)).Decode(&st); err != nil {
		return nil, fmt.Errorf("read status: %w", err)
	}
	return &st, nil
}

// Leader returns floating plugin's lease, as the host sees it.
func (c *Client) Leader(ctx context.Context, plugin string) (*LeaderInfo, error) {
	resp, err := c.do(ctx, http.MethodGet, "/v1/leader/"+url.PathEscape(plugin), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var info LeaderInfo
	if err := json.NewDecoder(limitAnswer(resp.Body)).Decode(&info); err != nil {
		return nil, fmt.Errorf("read leader: %w", err)
	}
	return &info, nil
}

// Metrics returns the host's metrics, in Prometheus's text format.
func (c *Client) Metrics(ctx context.Context) ([]byte, error) {
	resp, err := c.do(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(limitAnswer(resp.Body))
}

// Apply asks the host to apply req, calling on for each message as it
// comes. When the host refuses before it begins, it returns a
// *LockedError (another apply holds the lock), a *StaleError (a saved plan
// that no longer matches), spec problems, or another error of the host;
// when steps failed, an *ApplyError that holds each failure with its type.
// A forced stop whose end was confirmed is no failure: its step's event
// carries what it had to do (Event.Result.Cleanup; its Err gives the
// *runtime.CleanupError back).
func (c *Client) Apply(ctx context.Context, req ApplyRequest, on func(Message)) error {
	return c.stream(ctx, "/v1/apply", req, on)
}

// Restart replaces plugins of the last applied spec, and restarts their
// consumers.
func (c *Client) Restart(ctx context.Context, req ApplyRequest, on func(Message)) error {
	return c.stream(ctx, "/v1/restart", req, on)
}

// Down stops every plugin, consumers first, forgets the applied spec and
// ends the host; it returns once the host has gone.
func (c *Client) Down(ctx context.Context, req ApplyRequest, on func(Message)) error {
	pid := 0
	if c.dir != "" {
		// A host of this machine: Down returns once its process is gone,
		// so that the state dir's lock is free for the next host.
		if st, err := c.Status(ctx); err == nil && st.Host != nil && st.Host.PID != os.Getpid() {
			pid = st.Host.PID // a host in this process (a Go program's) ends with it
		}
	}
	if err := c.stream(ctx, "/v1/down", req, on); err != nil {
		return err
	}
	// The host closes its socket as it exits, then releases its lock.
	for {
		if err := c.Ping(ctx, time.Second); errors.Is(err, ErrNoHost) && (pid == 0 || gone(pid)) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (c *Client) stream(ctx context.Context, path string, req ApplyRequest, on func(Message)) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	resp, err := c.do(ctx, http.MethodPost, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	errDone := errors.New("done")
	var done error
	err = eachLine(resp.Body, "answer", func(m *Message) error {
		if on != nil {
			on(*m)
		}
		if m.Type == MsgDone {
			done = m.err()
			return errDone
		}
		return nil
	})
	if err == errDone {
		return done
	}
	if err != nil {
		return err
	}
	return errors.New("the host ended the apply without saying how it went: see its log, " + filepath.Join(c.dir, HostLog) + ", or graft status")
}

// Logs writes the last n lines of plugin's log to w and, with follow,
// every later line until ctx ends.
func (c *Client) Logs(ctx context.Context, plugin string, n int, follow bool, w io.Writer) error {
	q := url.Values{"n": {strconv.Itoa(n)}}
	if follow {
		q.Set("follow", "1")
	}
	resp, err := c.do(ctx, http.MethodGet, "/v1/logs/"+url.PathEscape(plugin)+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	if ctx.Err() != nil {
		return nil // the follower was stopped, as asked
	}
	return err
}

// do sends a request and turns error answers into errors.
func (c *Client) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	if err := c.plain.Do(ctx, c.http, c.base); err != nil {
		if errors.Is(err, cleartext.ErrServesTLS) {
			return nil, &TLSRequiredError{Host: c.where()}
		}
		return nil, c.failed(err)
	}
	return c.send(ctx, method, path, body)
}

// send sends a request, with the token when there is one, and turns
// error answers into errors.
func (c *Client) send(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.failed(err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	if resp.StatusCode == http.StatusUnauthorized {
		resp.Body.Close()
		return nil, ErrUnauthorized
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(limitAnswer(resp.Body))
	var eb ErrorBody
	if err := json.Unmarshal(b, &eb); err != nil {
		if cleartext.TLSAnswer(resp.StatusCode, b) {
			return nil, &TLSRequiredError{Host: c.where()}
		}
		return nil, fmt.Errorf("the host answered %s", resp.Status)
	}
	return nil, eb.Err()
}

// failed names err, of a request that got no answer.
func (c *Client) failed(err error) error {
	var peer *privsock.PeerError
	var plain *PlaintextError
	switch {
	case errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, ErrNoHost):
		return ErrNoHost
	case errors.As(err, &peer):
		return peer // it names the socket
	case errors.As(err, &plain):
		return plain // it names the host
	}
	return fmt.Errorf("talk to the host at %s: %w", c.where(), err)
}

// limitAnswer bounds what is read of an answer that is one JSON value.
func limitAnswer(r io.Reader) io.Reader { return io.LimitReader(r, MaxBody) }

// where names the host the client talks to.
func (c *Client) where() string {
	if c.dir != "" {
		if p, err := SocketPath(c.dir); err == nil {
			return p
		}
		return "the socket of " + c.dir
	}
	return c.base
}

// WatchStatus calls on with the host's status now, then again each time
// it changes, as the host tells (GET /v1/status?watch=1), until ctx ends
// (nil), on returns an error (that error), or the host ends the watch
// (ErrWatchEnded).
func (c *Client) WatchStatus(ctx context.Context, on func(*Status) error) error {
	resp, err := c.do(ctx, http.MethodGet, "/v1/status?watch=1", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var failed bool // on failed: its error is the watch's
	err = eachLine(resp.Body, "status", func(st *Status) error {
		err := on(st)
		failed = err != nil
		return err
	})
	switch {
	case failed:
		return err
	case ctx.Err() != nil:
		return nil // the watcher was stopped, as asked
	case err != nil:
		return err
	}
	return ErrWatchEnded
}

// eachLine decodes r, JSON documents one a line (the host's streams), a
// line at a time as a T, and hands each to on, until r ends (nil), a
// line cannot be read (an error saying what the lines are) or on fails
// (its error).
func eachLine[T any](r io.Reader, what string, on func(*T) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxBody)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return fmt.Errorf("read the host's %s: %w", what, err)
		}
		if err := on(&v); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read the host's %s: %w", what, err)
	}
	return nil
}

// ErrWatchEnded is a watch of the status that the host ended: it is
// going away (graft down, or its shutdown).
var ErrWatchEnded = errors.New("the host ended the watch: it is going away")

// Upgrade asks the host to replace its program (POST /v1/upgrade), and
// returns its report once the new program answers, its start-up's apply
// done (what the upgrade restarted is started again): a status whose host
// started after the request, applying nothing. It fails if the old
// program still answers alone after wait (its exec failed: its log says
// why), or with the host's refusal (a *UpgradeRefusedError, a
// *LockedError).
func (c *Client) Upgrade(ctx context.Context, req UpgradeRequest, wait time.Duration) (*UpgradeReport, *Status, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	asked := time.Now()
	resp, err := c.do(ctx, http.MethodPost, "/v1/upgrade", body)
	if err != nil {
		return nil, nil, err
	}
	var report UpgradeReport
	err = json.NewDecoder(limitAnswer(resp.Body)).Decode(&report)
	resp.Body.Close()
	c.http.CloseIdleConnections()
	if err != nil {
		return nil, nil, fmt.Errorf("read the upgrade's answer: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		st, err := c.Status(ctx)
		if err == nil && st.Host != nil && st.Host.Since.After(asked) && st.Host.Applying == "" {
			return &report, st, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("the host still runs its old program: the exec of the new one failed (the host's log says why)")
			}
			return &report, nil, fmt.Errorf("the new program did not answer within %s: %w", wait, err)
		}
		select {
		case <-ctx.Done():
			return &report, nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
