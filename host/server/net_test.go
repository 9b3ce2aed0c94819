//go:build linux

package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/host"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/asnobody"
	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime/runtimetest"
)

const tcpToken = "host-test-token"

// netHost is a host serving its socket and a TCP listener on loopback,
// for the test's life.
type netHost struct {
	h    *host.Host
	dir  string // the state dir
	addr string // the TCP listener's host:port
	log  *runtimetest.Recorder
	unix *hostapi.Client
}

func serveNet(t *testing.T, limits guard.Limits) *netHost {
	t.Helper()
	addr := testsupport.FreeAddr(t)
	n := &netHost{dir: filepath.Join(t.TempDir(), ".graft"), addr: addr, log: runtimetest.NewRecorder()}
	var err error
	n.h, err = host.Open(n.dir, host.Options{Logger: slog.New(slog.NewTextHandler(n.log, nil)), Timing: timing, Limits: limits})
	require.NoError(t, err)
	t.Cleanup(func() { n.h.Shutdown(context.Background()) })
	n.unix = serveWith(t, n.h, Options{TCP: TCP{Addr: "tcp://" + addr, Token: tcpToken}, Limits: limits})
	return n
}

// raw sends a request over TCP (with the token when auth is set) or,
// with tcp unset, over the host's socket, and returns the status and the
// body.
func (n *netHost) raw(t *testing.T, tcp, auth bool, method, path, body string, headers ...string) (int, string) {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	base := "http://" + n.addr
	if !tcp {
		sock, err := hostapi.SocketPath(n.dir)
		require.NoError(t, err)
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}
		base = "http://graft"
	}
	defer tr.CloseIdleConnections()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	require.NoError(t, err)
	if auth {
		req.Header.Set("Authorization", "Bearer "+tcpToken)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestTCPNeedsAToken: a host does not listen on TCP without a token,
// loopback included, and says which flag gives one.
func TestTCPNeedsAToken(t *testing.T) {
	h := open(t, filepath.Join(t.TempDir(), ".graft"))
	defer h.Shutdown(context.Background())
	err := Serve(context.Background(), h, Options{TCP: TCP{Addr: "tcp://127.0.0.1:0"}}, func() { t.Error("it listened") })
	var need *guard.TokenRequiredError
	require.ErrorAs(t, err, &need)
	assert.EqualError(t, err, "graft host --listen tcp://127.0.0.1:0: a TCP listener requires a token, loopback included: --token-file FILE")
	assert.Error(t, TCP{Addr: "127.0.0.1:7070", Token: "t"}.Validate())
}

// TestTCPBeyondLoopback: beyond loopback a host takes its token only over
// TLS, unless told to take it in plain; loopback needs neither.
func TestTCPBeyondLoopback(t *testing.T) {
	for _, addr := range []string{"tcp://0.0.0.0:7070", "tcp://:7070", "tcp://192.0.2.1:7070", "tcp://[::]:7070", "tcp://example.com:7070"} {
		err := TCP{Addr: addr, Token: "t"}.Validate()
		var plain *PlaintextError
		require.ErrorAs(t, err, &plain, addr)
		assert.EqualError(t, err, "graft host --listen "+addr+": beyond loopback the host takes its token only over TLS: --tls-cert FILE --tls-key FILE")
		assert.NoError(t, TCP{Addr: addr, Token: "t", InsecurePlaintext: true}.Validate(), addr)
		assert.NoError(t, TCP{Addr: addr, Token: "t", TLS: &tls.Config{}}.Validate(), addr)
	}
	for _, addr := range []string{"tcp://127.0.0.1:7070", "tcp://127.0.0.2:7070", "tcp://[::1]:7070", "tcp://localhost:7070"} {
		assert.NoError(t, TCP{Addr: addr, Token: "t"}.Validate(), addr)
	}
}

const sleeper = "name: shop\nplugins:\n  db: {command: [sleep, '60']}\n"

// TestAPIRefusals: over TCP, every request needs the token; on either
// listener, a web browser's request is refused, and so is a POST that is
// not JSON; an apply without a source (which would be the empty spec, and
// stop everything), a restart without names or with a source, a down
// with one, a bad plugin name in a path: each refused with 400, and the
// plugin runs on.
func TestAPIRefusals(t *testing.T) {
	n := serveNet(t, guard.Limits{})
	dir := filepath.Dir(n.dir)
	require.NoError(t, n.unix.Apply(context.Background(), hostapi.ApplyRequest{Source: wire(dir, sleeper)}, nil))
	src, err := json.Marshal(testsupport.Source(dir, sleeper))
	require.NoError(t, err)
	jsonType := []string{"Content-Type", "application/json"}

	for _, c := range []struct {
		name      string
		tcp, auth bool
		method    string
		path      string
		body      string
		headers   []string
		status    int
		want      string
	}{
		{"no token", true, false, "POST", "/v1/down", `{}`, jsonType, 401, "bad or missing token"},
		{"no token, GET", true, false, "GET", "/v1/status", "", nil, 401, "bad or missing token"},
		{"a cross-site form", true, true, "POST", "/v1/down", `{}`, []string{"Content-Type", "text/plain", "Origin", "https://evil.example"}, 403, "web browser"},
		{"a browser, on the socket", false, false, "GET", "/v1/status", "", []string{"Sec-Fetch-Site", "same-origin"}, 403, "web browser"},
		{"not JSON", false, false, "POST", "/v1/down", `{}`, []string{"Content-Type", "text/plain"}, 415, "application/json"},
		{"an apply of null", false, false, "POST", "/v1/apply", `null`, jsonType, 400, "an apply needs a source"},
		{"an apply of {}", true, true, "POST", "/v1/apply", `{}`, jsonType, 400, "an apply needs a source"},
		{"an apply of an empty source", false, false, "POST", "/v1/apply", `{"source":{"file":"x","dir":"/"}}`, jsonType, 400, "an apply needs a source"},
		{"an empty body", false, false, "POST", "/v1/apply", ``, jsonType, 400, "empty body"},
		{"more after the value", false, false, "POST", "/v1/apply", `{"source":` + string(src) + `} {}`, jsonType, 400, "more after the JSON value"},
		{"an unknown field", false, false, "POST", "/v1/apply", `{"source":` + string(src) + `,"nope":1}`, jsonType, 400, "unknown field"},
		{"a negative parallelism", false, false, "POST", "/v1/apply", `{"source":` + string(src) + `,"parallelism":-1}`, jsonType, 400, "parallelism -1"},
		{"a long holder", false, false, "POST", "/v1/apply", `{"source":` + string(src) + `,"holder":"` + strings.Repeat("h", 1025) + `"}`, jsonType, 400, "holder: 1025 bytes"},
		{"a restart of nothing", false, false, "POST", "/v1/restart", `{}`, jsonType, 400, "a restart names the plugins"},
		{"a restart with a source", false, false, "POST", "/v1/restart", `{"restart":["db"],"source":` + string(src) + `}`, jsonType, 400, "carries no source"},
		{"a restart of a bad name", false, false, "POST", "/v1/restart", `{"restart":["../db"]}`, jsonType, 400, "not a plugin's name"},
		{"a down with a source", false, false, "POST", "/v1/down", `{"source":` + string(src) + `}`, jsonType, 400, "a down carries no source"},
		{"a log outside", false, false, "GET", "/v1/logs/..%2F..%2Fhost", "", nil, 404, "no plugin is named"},
		{"a leader outside", false, false, "GET", "/v1/leader/%2Fetc%2Fpasswd", "", nil, 404, "no plugin is named"},
		{"no route", false, false, "GET", "/v2/status", "", nil, 404, "no route GET /v2/status"},
		{"a cleaned path", false, false, "GET", "/v1/x/../status", "", nil, 404, "no route"},
		{"another method", false, false, "GET", "/v1/apply", "", nil, 405, "want POST"},
	} {
		status, body := n.raw(t, c.tcp, c.auth, c.method, c.path, c.body, c.headers...)
		assert.Equal(t, c.status, status, "%s: %s", c.name, body)
		var eb hostapi.ErrorBody
		if assert.NoError(t, json.Unmarshal([]byte(body), &eb), "%s: %s", c.name, body) {
			assert.Contains(t, eb.Error, c.want, c.name)
		}
	}
	assert.Equal(t, map[string]plan.Status{"db": plan.Running}, statuses(n.h.Status()), "nothing stopped")

	// What graft's clients send still works, on both listeners.
	st, err := n.unix.Status(context.Background())
	require.NoError(t, err)
	assert.Len(t, st.Plugins, 1)
	tc, err := hostapi.NewTCPClient(hostapi.TCP{Addr: "tcp://" + n.addr, Token: tcpToken})
	require.NoError(t, err)
	defer tc.Close()
	require.NoError(t, tc.Apply(context.Background(), hostapi.ApplyRequest{Source: wire(dir, sleeper)}, nil))
	require.NoError(t, tc.Restart(context.Background(), hostapi.ApplyRequest{Restart: []string{"db"}}, nil))
	_, err = tc.Leader(context.Background(), "db")
	var hint interface{ Hint() string }
	assert.ErrorAs(t, err, &hint, "db is no floating plugin, and the answer says so: %v", err)

	bad, err := hostapi.NewTCPClient(hostapi.TCP{Addr: "tcp://" + n.addr, Token: "not-it"})
	require.NoError(t, err)
	_, err = bad.Status(context.Background())
	assert.ErrorIs(t, err, hostapi.ErrUnauthorized)
	log := n.log.String()
	assert.Contains(t, log, "refused a request with a bad or missing token")
	assert.NotContains(t, log, tcpToken)
	assert.NotContains(t, log, "not-it")
}

// TestSocketSurvivesATCPFlood: whoever reaches the TCP listener cannot
// lock out its token holders, nor the owner's socket, which has pools of
// its own (docs/security.md#listeners): not with tokenless kept-alive
// connections (each 401 closes its connection), not with connections
// that send nothing (evicted), and a token holder not with status
// watches (429 past the stream limit).
func TestSocketSurvivesATCPFlood(t *testing.T) {
	lim := guard.Limits{MaxConns: 4, MaxUnauthenticated: 4, MaxStreams: 2, AuthTimeout: time.Minute}
	n := serveNet(t, lim)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", n.addr)
		require.NoError(t, err)
		conns = append(conns, c)
		return c
	}
	served := func(what string) {
		t.Helper()
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", "http://"+n.addr+"/v1/status", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tcpToken)
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Do(req)
		require.NoError(t, err, "%s: the token holder is locked out", what)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, what)
		st, err := n.unix.Status(ctx)
		require.NoError(t, err, "%s: the owner's socket answers", what)
		assert.Equal(t, os.Getpid(), st.Host.PID)
		assert.Less(t, time.Since(start), 3*time.Second, what)
	}

	for range 2 * lim.MaxConns {
		c := dial()
		fmt.Fprint(c, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		assert.True(t, resp.Close, "a 401 closes its connection")
	}
	served("after tokenless kept-alive requests")

	for range 100 {
		dial()
	}
	served("after connections that send nothing")

	watch := func(c net.Conn) *http.Response {
		fmt.Fprintf(c, "GET /v1/status?watch=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", tcpToken)
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		return resp
	}
	for range lim.MaxStreams {
		require.Equal(t, http.StatusOK, watch(dial()).StatusCode)
	}
	for range lim.MaxConns - lim.MaxStreams {
		resp := watch(dial())
		b, _ := io.ReadAll(resp.Body)
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		assert.Contains(t, string(b), "the host refused the stream: it serves at most 2 streams at once")
	}
	body, err := json.Marshal(hostapi.ApplyRequest{Source: wire(t.TempDir(), "name: shop\nplugins: {}\n")})
	require.NoError(t, err)
	status, answer := n.raw(t, true, true, "POST", "/v1/apply", string(body), "Content-Type", "application/json")
	assert.Equal(t, http.StatusTooManyRequests, status, "an apply is a stream too")
	assert.Contains(t, answer, "(status watches, log follows, applies, restarts and downs)")
	status, _ = n.raw(t, true, true, "GET", "/v1/logs/api?follow=1", "")
	assert.Equal(t, http.StatusTooManyRequests, status, "a log follow is a stream")
	served("after status watches")
	// The socket's streams are its own.
	sock, err := hostapi.SocketPath(n.dir)
	require.NoError(t, err)
	for range lim.MaxStreams {
		c, err := net.Dial("unix", sock)
		require.NoError(t, err)
		conns = append(conns, c)
		assert.Equal(t, http.StatusOK, watch(c).StatusCode, "a watch on the owner's socket")
	}
}

// TestSlowClientsCutOff: on either listener, a client that sends its
// headers too slowly, or its body, is cut off; one idle after its answer
// is closed.
func TestSlowClientsCutOff(t *testing.T) {
	n := serveNet(t, guard.Limits{HeaderTimeout: 200 * time.Millisecond, BodyTimeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond})
	sock, err := hostapi.SocketPath(n.dir)
	require.NoError(t, err)
	for _, where := range []struct{ network, addr string }{{"unix", sock}, {"tcp", n.addr}} {
		for _, req := range []string{
			"GET /v1/status HTTP/1.1\r\nHost: x\r\n",
			"POST /v1/down HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tcpToken + "\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{",
			"GET /v1/status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tcpToken + "\r\n\r\n",
		} {
			c, err := net.Dial(where.network, where.addr)
			require.NoError(t, err)
			fmt.Fprint(c, req)
			start := time.Now()
			c.SetReadDeadline(start.Add(5 * time.Second))
			b, err := io.ReadAll(c)
			c.Close()
			assert.NoError(t, err, "%s %q: not cut off", where.network, req)
			assert.Greater(t, time.Since(start), 150*time.Millisecond)
			if strings.HasPrefix(req, "POST") {
				assert.Contains(t, string(b), "408 Request Timeout")
			}
		}
	}
	assert.Equal(t, map[string]plan.Status{}, statuses(n.h.Status()))
	_, err = n.unix.Status(context.Background())
	assert.NoError(t, err, "the host is still there")
}

// TestSocketDirOfAnotherUser: graft-<uid> in the temporary directory
// (where graft once put the sockets of state dirs too deep for one) made
// first by another user (nobody, for real) does not keep a host of such
// a dir from listening: it listens in a directory of its own, which a
// client finds, and makes nothing in theirs.
func TestSocketDirOfAnotherUser(t *testing.T) {
	uid := asnobody.Need(t)
	tmp := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", tmp)
	theirs := filepath.Join(tmp, "graft-0")
	require.NoError(t, os.Mkdir(theirs, 0o700))
	require.NoError(t, os.Chown(theirs, uid, uid))

	dirs, log := runDeep(t, theirs)
	for _, dir := range dirs {
		assert.Equal(t, tmp, filepath.Dir(dir))
	}
	assert.NotContains(t, log, "level=WARN")
	assert.Equal(t, []string{"graft-0"}, entries(t, tmp), "the host's directories are gone")
	assertEmpty(t, theirs)
}
