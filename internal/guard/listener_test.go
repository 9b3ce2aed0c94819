package guard

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/internal/tlsconf"
)

// tokenGet is a token holder's request on a fresh connection to url,
// with client (nil: plain HTTP), which must be answered within d.
func tokenGet(t *testing.T, client *http.Client, url string, d time.Duration) (int, error) {
	t.Helper()
	if client == nil {
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr}
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url+"/v1/status", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestRefusedConnectionsClosed: twice MaxConns clients without the token
// each get their 401 on a kept-alive connection and hold it; the guard
// closes every one (Connection: close), and a token holder is served at
// once.
func TestRefusedConnectionsClosed(t *testing.T) {
	lim := Limits{MaxConns: 4, AuthTimeout: time.Minute}
	s := serve(t, Config{Token: testToken, Limits: lim}, echo)
	for i := range 2 * lim.MaxConns {
		c := dial(t, s)
		fmt.Fprint(c, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		assert.True(t, resp.Close, "connection %d: the 401 says Connection: close", i)
		_, err = br.ReadByte()
		assert.ErrorIs(t, err, io.EOF, "connection %d: the server closes it after its 401", i)
	}
	start := time.Now()
	status, err := tokenGet(t, nil, s.url, 2*time.Second)
	require.NoError(t, err, "the token holder is locked out")
	assert.Equal(t, 200, status)
	assert.Less(t, time.Since(start), 2*time.Second)
}

// mtls serves echo behind the token on TLS that requires a client
// certificate, and returns its URL and a client with the certificate.
func mtls(t *testing.T, lim Limits) (*served, *http.Client) {
	t.Helper()
	dir := t.TempDir()
	testsupport.WriteCerts(t, dir)
	conf, err := tlsconf.Server(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), filepath.Join(dir, "ca.pem"))
	require.NoError(t, err)
	s := &served{log: &logBuf{}}
	c := Config{Daemon: "test", Token: testToken, MaxBody: 1 << 10, Limits: lim}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c.Log = slog.New(slog.NewTextHandler(s.log, nil))
	srv := Server(Handler(http.HandlerFunc(echo), c), lim, c.Log)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(tls.NewListener(Listener(ln, lim), conf))
	}()
	s.addr = ln.Addr().String()
	s.url = "https://" + s.addr
	cconf, err := tlsconf.Client(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key"))
	require.NoError(t, err)
	tr := &http.Transport{TLSClientConfig: cconf, DisableKeepAlives: true}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
		<-done
	})
	return s, &http.Client{Transport: tr}
}

// TestSilentConnectionsEvicted: with client certificates required, 300
// connections that never send a byte (not even a TLS hello) do not keep
// a client with the certificate and the token out, though the deadline
// of unauthenticated connections is long: a newer connection evicts the
// oldest. They come from the client's own address (loopback), the
// hardest case for it.
func TestSilentConnectionsEvicted(t *testing.T) {
	s, client := mtls(t, Limits{MaxConns: 4, MaxUnauthenticated: 4, AuthTimeout: time.Minute})
	for range 300 {
		dial(t, s)
	}
	for range 3 {
		start := time.Now()
		status, err := tokenGet(t, client, s.url, 3*time.Second)
		require.NoError(t, err, "the certificate and token holder is locked out")
		assert.Equal(t, 200, status)
		assert.Less(t, time.Since(start), 3*time.Second)
	}
}

// TestUnauthenticatedDeadline: a connection that has not passed the
// token check within AuthTimeout is closed, whatever it is doing: silent
// (before its TLS handshake, or its first request), sending its headers
// slowly, or after a request refused for another reason than its token.
// One that passed it is kept until the idle timeout.
func TestUnauthenticatedDeadline(t *testing.T) {
	lim := Limits{AuthTimeout: 300 * time.Millisecond, HeaderTimeout: time.Minute, IdleTimeout: time.Minute}
	s := serve(t, Config{Token: testToken, Limits: lim}, echo)
	for _, sent := range []string{"", "GET /v1/status HTTP/1.1\r\nHost: x\r\n"} {
		c := dial(t, s)
		fmt.Fprint(c, sent)
		took, _ := closedWithin(t, c, 5*time.Second)
		assert.Greater(t, took, 250*time.Millisecond, "%q", sent)
	}
	ts, _ := mtls(t, lim)
	c := dial(t, ts)
	took, _ := closedWithin(t, c, 5*time.Second)
	assert.Greater(t, took, 250*time.Millisecond, "TLS without a handshake")

	c = dial(t, s)
	fmt.Fprintf(c, "GET /v1/status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", testToken)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	// Twice the deadline of unauthenticated connections.
	c.SetReadDeadline(time.Now().Add(2 * lim.AuthTimeout))
	_, err = br.ReadByte()
	var ne net.Error
	require.ErrorAs(t, err, &ne, "an authenticated connection was closed")
	assert.True(t, ne.Timeout())
}

// TestEvictionSparesOtherAddresses: when the unauthenticated pool is
// full, the connection evicted is the oldest of the address that holds
// the most: a client that connected first, from another address, keeps
// its connection through a flood from one address, and is served on it.
func TestEvictionSparesOtherAddresses(t *testing.T) {
	lim := Limits{MaxConns: 4, MaxUnauthenticated: 4, AuthTimeout: time.Minute}
	s := serve(t, Config{Token: testToken, Limits: lim}, echo)
	mine := dial(t, s)
	flooder := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	var flood []net.Conn
	for range 20 {
		c, err := flooder.Dial("tcp", s.addr)
		if err != nil {
			t.Skipf("no second loopback address to flood from: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		flood = append(flood, c)
	}
	// Once the last of the flood is accepted, all but the newest three
	// of it were evicted.
	for _, c := range flood[:17] {
		closedWithin(t, c, 5*time.Second)
	}
	fmt.Fprintf(mine, "GET /v1/status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", testToken)
	mine.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(mine), nil)
	require.NoError(t, err, "the first client's connection was evicted")
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
}

// TestStreamLimit: a listener serves MaxStreams streams at once; the next
// is answered 429, naming the limit, and its connection closed, while a
// token holder's ordinary request is still served; once a stream ends,
// another may begin.
func TestStreamLimit(t *testing.T) {
	lim := Limits{MaxConns: 3, MaxStreams: 2}
	s := serve(t, Config{Token: testToken, Limits: lim, Streams: "watches"}, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/watch" {
			return
		}
		release, ok := Stream(w, r)
		if !ok {
			return
		}
		defer release()
		fmt.Fprintln(w, "streaming")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	watch := func() (net.Conn, *http.Response) {
		c := dial(t, s)
		fmt.Fprintf(c, "GET /watch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", testToken)
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		return c, resp
	}
	var streams []net.Conn
	for range lim.MaxStreams {
		c, resp := watch()
		require.Equal(t, 200, resp.StatusCode)
		streams = append(streams, c)
	}
	c, resp := watch()
	b, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, KindTooMany, kindOf(t, string(b)))
	assert.Contains(t, string(b), "the test refused the stream: it serves at most 2 streams at once on this listener (watches)")
	assert.True(t, resp.Close, "the 429 closes its connection")
	c.Close()

	status, err := tokenGet(t, nil, s.url, 2*time.Second)
	require.NoError(t, err, "the streams took every slot")
	assert.Equal(t, 200, status)

	streams[0].Close()
	require.Eventually(t, func() bool {
		c, resp := watch()
		defer c.Close()
		return resp.StatusCode == 200
	}, 3*time.Second, 50*time.Millisecond)
	assert.True(t, strings.Contains(s.log.String(), "refused a stream"), "%s", s.log)
}

// TestDefaultLimits: the pools' defaults, and a stream limit below the
// connections'.
func TestDefaultLimits(t *testing.T) {
	l := Limits{}.WithDefaults()
	assert.Equal(t, DefaultAuthTimeout, l.AuthTimeout)
	assert.Equal(t, 256, l.MaxUnauthenticated)
	assert.Equal(t, 1024, l.MaxIdle)
	assert.Equal(t, 128, l.MaxStreams)
	assert.Equal(t, 3, Limits{MaxConns: 4, MaxStreams: 10}.WithDefaults().MaxStreams)
}

// TestNoSlotAnswered503: a request that passed the token check while
// every slot for an authenticated connection stays taken by a request
// under way is answered 503 after AuthTimeout, naming the limit, and its
// connection closed.
func TestNoSlotAnswered503(t *testing.T) {
	lim := Limits{MaxConns: 1, AuthTimeout: 300 * time.Millisecond}
	release := make(chan struct{})
	s := serve(t, Config{Token: testToken, Limits: lim}, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			<-release
		}
	})
	defer close(release)
	held := dial(t, s)
	fmt.Fprintf(held, "GET /hold HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", testToken)
	resp, err := http.ReadResponse(bufio.NewReader(held), nil)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)

	c := dial(t, s)
	start := time.Now()
	fmt.Fprintf(c, "GET /v1/status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", testToken)
	took, answer := closedWithin(t, c, 5*time.Second)
	assert.Greater(t, took, 250*time.Millisecond)
	assert.True(t, strings.HasPrefix(answer, "HTTP/1.1 503 "), answer)
	assert.Contains(t, answer, "Connection: close")
	assert.Contains(t, answer, "it serves 1 authenticated connections at once, and none came free within 300ms")
	assert.Less(t, time.Since(start), 3*time.Second)
}

// keptAlive is a token holder's client that keeps its connections.
func keptAlive(t *testing.T) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// reusedGet is tokenGet on client, which also reports whether the
// request went on a connection the client kept from an earlier one.
func reusedGet(t *testing.T, client *http.Client, url string) (status int, reused bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }})
	req, err := http.NewRequestWithContext(ctx, "GET", url+"/v1/status", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := client.Do(req)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, reused
}

// TestIdleConnectionsHoldNoSlot: connections kept alive between requests
// do not keep other token holders out, and are not closed for them. With
// twice MaxConns clients each keeping one, every client is served, at
// once (the wait for a slot is a minute here), and again on the
// connection it kept. A request that comes while every slot serves one
// waits, and gets the first that ends.
func TestIdleConnectionsHoldNoSlot(t *testing.T) {
	lim := Limits{MaxConns: 4, AuthTimeout: time.Minute}
	release := make(chan struct{})
	s := serve(t, Config{Token: testToken, Limits: lim}, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-release
		}
	})
	var clients []*http.Client
	for range 2 * lim.MaxConns {
		c := keptAlive(t)
		clients = append(clients, c)
		start := time.Now()
		status, _ := reusedGet(t, c, s.url)
		assert.Equal(t, 200, status)
		assert.Less(t, time.Since(start), 5*time.Second, "waited for a slot held by an idle connection")
	}
	for i, c := range clients {
		status, reused := reusedGet(t, c, s.url)
		assert.Equal(t, 200, status)
		assert.True(t, reused, "client %d: its idle connection was closed", i)
	}

	// Every slot busy: the next request waits, and gets the slot of the
	// first that ends, though that one is kept alive.
	base := s.runs.Load()
	var held []chan error
	for range lim.MaxConns {
		done := make(chan error, 1)
		held = append(held, done)
		c := keptAlive(t)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/hold", nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := c.Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			done <- err
		}()
	}
	require.Eventually(t, func() bool { return s.runs.Load() >= base+int64(lim.MaxConns) }, 5*time.Second, 10*time.Millisecond)
	waiter := make(chan error, 1)
	go func() {
		status, err := tokenGet(t, clients[0], s.url, 10*time.Second)
		if err == nil && status != 200 {
			err = fmt.Errorf("answered %d", status)
		}
		waiter <- err
	}()
	select {
	case err := <-waiter:
		t.Fatalf("served while every slot was busy: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	for _, done := range held {
		require.NoError(t, <-done)
	}
	select {
	case err := <-waiter:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting request got no slot once the others were done")
	}
}

// TestMaxIdle: past MaxIdle connections kept alive, the one idle the
// longest is closed: the first clients dial again (a GET sent on a
// connection found closed is sent again on a new one, whose GotConn comes
// last), the last reuse theirs.
func TestMaxIdle(t *testing.T) {
	lim := Limits{MaxConns: 4, MaxIdle: 2}
	s := serve(t, Config{Token: testToken, Limits: lim}, echo)
	// get is reusedGet, once the server has noted its connection idle
	// (the answer reaches the client before that).
	get := func(c *http.Client) (int, bool) {
		status, reused := reusedGet(t, c, s.url)
		require.Eventually(t, func() bool {
			s.ln.mu.Lock()
			defer s.ln.mu.Unlock()
			return s.ln.used == 0
		}, 5*time.Second, time.Millisecond)
		return status, reused
	}
	var clients []*http.Client
	for range 4 {
		c := keptAlive(t)
		clients = append(clients, c)
		status, _ := get(c)
		require.Equal(t, 200, status)
	}
	// The kept ones first: the others' new connections, idle in turn,
	// have the oldest idle closed.
	for _, i := range []int{3, 2, 0, 1} {
		status, reused := get(clients[i])
		assert.Equal(t, 200, status)
		assert.Equal(t, i >= 2, reused, "client %d", i)
	}
}

// TestBurstOfTokenHolders: ten clients, each opening a dozen fresh
// connections at once (ten hosts starting an apply's plugins on one
// runner), are all served with the default limits: the burst fits the
// unauthenticated pool, the idle connections it leaves hold no slot, and
// each client's next dozen at once reuse them.
func TestBurstOfTokenHolders(t *testing.T) {
	s := serve(t, Config{Token: testToken}, echo)
	errs := make(chan error, 10*12)
	for range 10 {
		c := keptAlive(t)
		for range 12 {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/v1/status", nil)
				req.Header.Set("Authorization", "Bearer "+testToken)
				resp, err := c.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						err = fmt.Errorf("answered %s", resp.Status)
					}
				}
				errs <- err
			}()
		}
	}
	failed := 0
	for range 10 * 12 {
		if err := <-errs; err != nil {
			failed++
			t.Log(err)
		}
	}
	assert.Zero(t, failed)
}
