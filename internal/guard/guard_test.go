package guard

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// logBuf is a log that tests read while servers write it.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// served is a guarded server on a loopback port, for the test's life.
type served struct {
	url  string
	addr string
	log  *logBuf
	runs atomic.Int64 // requests that reached the handler
	ln   *limited     // the listener served
}

const testToken = "s3cret-token"

// serve runs next behind a guard of c, on a loopback port limited to
// c.Limits.MaxConns connections.
func serve(t *testing.T, c Config, next http.HandlerFunc) *served {
	t.Helper()
	s := &served{log: &logBuf{}}
	c.Log = slog.New(slog.NewTextHandler(s.log, nil))
	if c.Daemon == "" {
		c.Daemon = "test"
	}
	if c.MaxBody == 0 {
		c.MaxBody = 1 << 10
	}
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.runs.Add(1)
		next(w, r)
	}), c)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := Server(h, c.Limits, c.Log)
	s.ln = Listener(ln, c.Limits).(*limited)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(s.ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	s.addr = ln.Addr().String()
	s.url = "http://" + s.addr
	return s
}

// echo answers the body it got.
func echo(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Write(b)
}

// do sends a request with the given headers and returns its status and
// body.
func do(t *testing.T, method, url string, body io.Reader, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// kindOf decodes an error answer's kind.
func kindOf(t *testing.T, body string) string {
	t.Helper()
	var b Body
	require.NoError(t, json.Unmarshal([]byte(body), &b), body)
	require.NotEmpty(t, b.Error)
	return b.Kind
}

// TestRefusals: every request needs the token; none may come from a web
// browser; every POST and every body is JSON; bodies are bounded. What
// is refused never reaches the handler.
func TestRefusals(t *testing.T) {
	s := serve(t, Config{Token: testToken}, echo)
	auth := []string{"Authorization", "Bearer " + testToken}
	json := []string{"Content-Type", "application/json"}
	with := func(hs ...[]string) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h...)
		}
		return out
	}
	for _, c := range []struct {
		name    string
		method  string
		body    string
		headers []string
		status  int
		kind    string
	}{
		{"no token", "GET", "", nil, 401, KindUnauthorized},
		{"another token", "POST", "{}", with(json, []string{"Authorization", "Bearer nope"}), 401, KindUnauthorized},
		{"the token without its scheme", "GET", "", []string{"Authorization", testToken}, 401, KindUnauthorized},
		{"a cross-site form", "POST", "a=b", with(auth, []string{"Content-Type", "application/x-www-form-urlencoded", "Origin", "https://evil.example"}), 403, KindForbidden},
		{"a page's fetch", "GET", "", with(auth, []string{"Origin", "http://localhost:8080"}), 403, KindForbidden},
		{"a rebound page's fetch", "GET", "", with(auth, []string{"Sec-Fetch-Site", "same-origin"}), 403, KindForbidden},
		{"an empty Origin", "GET", "", with(auth, []string{"Origin", ""}), 403, KindForbidden},
		{"text/plain", "POST", "{}", with(auth, []string{"Content-Type", "text/plain"}), 415, KindMediaType},
		{"a POST without a type", "POST", "", auth, 415, KindMediaType},
		{"a GET with a form body", "GET", "a=b", with(auth, []string{"Content-Type", "application/x-www-form-urlencoded"}), 415, KindMediaType},
		{"a body over the limit", "POST", strings.Repeat("x", 1<<10+1), with(auth, json), 413, KindTooLarge},
	} {
		before := s.runs.Load()
		status, body := do(t, c.method, s.url+"/v1/x", strings.NewReader(c.body), c.headers...)
		assert.Equal(t, c.status, status, "%s: %s", c.name, body)
		assert.Equal(t, c.kind, kindOf(t, body), c.name)
		assert.Equal(t, before, s.runs.Load(), "%s: the handler ran", c.name)
	}

	status, body := do(t, "POST", s.url+"/v1/x", strings.NewReader(`{"a":1}`), with(auth, []string{"Content-Type", "application/json; charset=utf-8"})...)
	assert.Equal(t, 200, status)
	assert.Equal(t, `{"a":1}`, body)
	status, _ = do(t, "POST", s.url+"/v1/x", strings.NewReader(strings.Repeat("x", 1<<10)), with(auth, json)...)
	assert.Equal(t, 200, status, "a body of exactly the limit")
	status, _ = do(t, "GET", s.url+"/v1/x", nil, auth...)
	assert.Equal(t, 200, status)
	assert.NotContains(t, s.log.String(), testToken)
}

// TestChunkedBodyOverLimit: a body of unknown length is cut at the limit.
func TestChunkedBodyOverLimit(t *testing.T) {
	s := serve(t, Config{}, echo)
	pr, pw := io.Pipe()
	go func() {
		for range 8 {
			if _, err := pw.Write(bytes.Repeat([]byte("x"), 512)); err != nil {
				return
			}
		}
		pw.Close()
	}()
	status, body := do(t, "POST", s.url+"/v1/x", pr, "Content-Type", "application/json")
	pr.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
	assert.Contains(t, body, "its body is over 1 KiB")
	assert.Zero(t, s.runs.Load())
}

// TestRefusalsLoggedAtABoundedRate: a flood of bad tokens makes one line
// per period, which counts those it left out; the path is clipped and
// escaped, and no token is logged.
func TestRefusalsLoggedAtABoundedRate(t *testing.T) {
	s := serve(t, Config{Token: testToken, Limits: Limits{LogEvery: 300 * time.Millisecond}}, echo)
	long := "/v1/" + strings.Repeat("a", 100) + "%0A%1B"
	for range 20 {
		status, _ := do(t, "GET", s.url+long, nil, "Authorization", "Bearer wrong-token")
		require.Equal(t, 401, status)
	}
	lines := strings.Split(strings.TrimSpace(s.log.String()), "\n")
	require.Len(t, lines, 1, "%s", s.log)
	assert.Contains(t, lines[0], "refused a request with a bad or missing token")
	assert.Contains(t, lines[0], "suppressed=0")
	assert.Contains(t, lines[0], "path=/v1/"+strings.Repeat("a", 60)+"...")
	assert.NotContains(t, lines[0], strings.Repeat("a", 61))

	time.Sleep(350 * time.Millisecond)
	do(t, "GET", s.url+"/v1/status", nil, "Origin", "https://evil.example")
	lines = strings.Split(strings.TrimSpace(s.log.String()), "\n")
	require.Len(t, lines, 2, "%s", s.log)
	assert.Contains(t, lines[1], "refused a request from a web browser")
	assert.Contains(t, lines[1], "suppressed=19")
	assert.NotContains(t, s.log.String(), "wrong-token")
	assert.NotContains(t, s.log.String(), "evil")
}

func TestClip(t *testing.T) {
	assert.Equal(t, "abc", clip("abc", 3))
	assert.Equal(t, "ab...", clip("abc", 2))
	assert.Equal(t, `a\x0ab\x1b\x5c\xc3\xa9`, clip("a\nb\x1b\\é", 10))
}

// dial opens a raw connection to s.
func dial(t *testing.T, s *served) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reads c until the server closes it and returns how long
// that took, failing after d; what it read is returned too.
func closedWithin(t *testing.T, c net.Conn, d time.Duration) (time.Duration, string) {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(d))
	b, err := io.ReadAll(c)
	require.NoError(t, err, "the server did not close the connection within %s", d)
	return time.Since(start), string(b)
}

// TestSlowHeaders: a client that sends its headers too slowly is cut off
// after the header timeout.
func TestSlowHeaders(t *testing.T) {
	s := serve(t, Config{Limits: Limits{HeaderTimeout: 200 * time.Millisecond}}, echo)
	c := dial(t, s)
	fmt.Fprint(c, "GET /v1/status HTTP/1.1\r\nHost: x\r\n")
	took, _ := closedWithin(t, c, 5*time.Second)
	assert.Greater(t, took, 150*time.Millisecond)
	assert.Zero(t, s.runs.Load())
}

// TestSlowBody: a body that does not come within the body timeout gets
// 408, and the handler never runs; a refused request's body is not
// waited for either.
func TestSlowBody(t *testing.T) {
	s := serve(t, Config{Token: testToken, Limits: Limits{BodyTimeout: 300 * time.Millisecond}}, echo)
	c := dial(t, s)
	fmt.Fprintf(c, "POST /v1/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":", testToken)
	took, answer := closedWithin(t, c, 5*time.Second)
	assert.Greater(t, took, 250*time.Millisecond)
	assert.True(t, strings.HasPrefix(answer, "HTTP/1.1 408 "), answer)
	assert.Contains(t, answer, `"kind":"timeout"`)
	assert.Zero(t, s.runs.Load())

	c = dial(t, s)
	fmt.Fprint(c, "POST /v1/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
	_, answer = closedWithin(t, c, 5*time.Second)
	assert.True(t, strings.HasPrefix(answer, "HTTP/1.1 401 "), answer)
	assert.Zero(t, s.runs.Load())
}

// TestStreamingOutlivesTimeouts: an answer that streams far longer than
// every timeout (an apply's, a log follower's) goes on to its end, its
// request's context alive: only reading the request is bounded.
func TestStreamingOutlivesTimeouts(t *testing.T) {
	lim := Limits{HeaderTimeout: 100 * time.Millisecond, BodyTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond}
	s := serve(t, Config{Limits: lim}, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		for i := range 10 {
			select {
			case <-r.Context().Done():
				fmt.Fprintln(w, "cancelled")
				return
			case <-time.After(60 * time.Millisecond):
			}
			fmt.Fprintln(w, "line", i)
			w.(http.Flusher).Flush()
		}
		fmt.Fprintln(w, "done")
	})
	for _, method := range []string{"GET", "POST"} {
		var body io.Reader
		if method == "POST" {
			body = strings.NewReader(`{"source":{}}`)
		}
		status, out := do(t, method, s.url+"/v1/apply", body, "Content-Type", "application/json")
		assert.Equal(t, 200, status)
		assert.True(t, strings.HasSuffix(out, "line 9\ndone\n"), "%s: %q", method, out)
	}
}

// TestIdleConnectionsClosed: a kept-alive connection that sends nothing
// more is closed after the idle timeout.
func TestIdleConnectionsClosed(t *testing.T) {
	s := serve(t, Config{Limits: Limits{IdleTimeout: 200 * time.Millisecond}}, echo)
	c := dial(t, s)
	fmt.Fprint(c, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	io.ReadAll(resp.Body)
	resp.Body.Close()
	start := time.Now()
	c.SetReadDeadline(start.Add(5 * time.Second))
	_, err = br.ReadByte()
	assert.ErrorIs(t, err, io.EOF)
	assert.Greater(t, time.Since(start), 150*time.Millisecond)
}

// TestPanicAnswered500: a handler's panic is answered 500 and logged with
// its stack, and the server goes on; one that panics mid-answer breaks
// that answer off.
func TestPanicAnswered500(t *testing.T) {
	s := serve(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/boom":
			var m map[string]int
			m["x"] = 1 // a nil map: a real runtime panic
		case "/late":
			fmt.Fprintln(w, "begun")
			w.(http.Flusher).Flush()
			panic("late")
		}
		fmt.Fprintln(w, "fine")
	})
	status, body := do(t, "GET", s.url+"/boom", nil)
	assert.Equal(t, 500, status)
	assert.Equal(t, KindInternal, kindOf(t, body))
	log := s.log.String()
	assert.Contains(t, log, "a request panicked; the test goes on")
	assert.Contains(t, log, "assignment to entry in nil map")
	assert.Contains(t, log, "guard_test.go", "the stack")

	resp, err := http.Get(s.url + "/late")
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Error(t, err, "the answer is broken off: %q", b)
	assert.Equal(t, "begun\n", string(b))
	http.DefaultClient.CloseIdleConnections()

	status, body = do(t, "GET", s.url+"/fine", nil)
	assert.Equal(t, 200, status)
	assert.Equal(t, "fine\n", body)
}

// TestConnectionLimit: a listener serves MaxConns connections at once;
// while each serves a request, the next waits until one closes.
func TestConnectionLimit(t *testing.T) {
	s := serve(t, Config{Limits: Limits{MaxConns: 3}}, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	})
	var busy []net.Conn
	for range 3 {
		c := dial(t, s)
		fmt.Fprint(c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode)
		busy = append(busy, c)
	}
	answered := make(chan int, 1)
	go func() {
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get(s.url + "/v1/status")
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	select {
	case code := <-answered:
		t.Fatalf("a fourth connection was served (%d) while three were busy", code)
	case <-time.After(300 * time.Millisecond):
	}
	busy[0].Close()
	select {
	case code := <-answered:
		assert.Equal(t, 200, code)
	case <-time.After(5 * time.Second):
		t.Fatal("the fourth connection was not served once one closed")
	}
}

// TestLargeBodiesOneAtATime: while one body over LargeBody is read,
// another waits its turn; small ones do not.
func TestLargeBodiesOneAtATime(t *testing.T) {
	var order []string
	var mu sync.Mutex
	s := serve(t, Config{MaxBody: 4 << 20}, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		order = append(order, fmt.Sprintf("%s %d", r.URL.Path, len(b)))
		mu.Unlock()
	})
	// The first large body stops half way.
	slow := dial(t, s)
	fmt.Fprintf(slow, "POST /first HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 2<<20)
	_, err := slow.Write(bytes.Repeat([]byte("a"), 3<<19))
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond) // it has its turn

	second := make(chan int, 1)
	go func() {
		status, _ := doQuiet(s.url+"/second", bytes.Repeat([]byte("b"), 2<<20))
		second <- status
	}()
	select {
	case <-second:
		t.Fatal("a second large body was read while the first was")
	case <-time.After(300 * time.Millisecond):
	}
	status, _ := doQuiet(s.url+"/small", []byte("{}"))
	assert.Equal(t, 200, status, "a small body does not wait")

	_, err = slow.Write(bytes.Repeat([]byte("a"), 1<<19))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	select {
	case status := <-second:
		assert.Equal(t, 200, status)
	case <-time.After(10 * time.Second):
		t.Fatal("the second large body was never read")
	}
	mu.Lock()
	defer mu.Unlock()
	assert.ElementsMatch(t, []string{"/small 2", "/first 2097152", "/second 2097152"}, order)
	assert.Equal(t, "/small 2", order[0], "the small body went first")
}

// doQuiet posts body as JSON, for a goroutine: no test assertions.
func doQuiet(url string, body []byte) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func TestTokenRequiredError(t *testing.T) {
	err := &TokenRequiredError{Daemon: "graft host", Listen: "tcp://127.0.0.1:7070"}
	assert.EqualError(t, err, "graft host --listen tcp://127.0.0.1:7070: a TCP listener requires a token, loopback included: --token-file FILE")
	assert.Contains(t, err.Hint(), "--token-file")
}
