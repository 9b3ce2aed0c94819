//go:build linux

package runner

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/httpapi"
	"github.com/graftland/graft/runnerapi"
)

// unescape undoes escape for names short enough to be kept whole.
func unescape(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		var c byte
		for _, h := range []byte{s[i+1], s[i+2]} {
			c <<= 4
			switch {
			case '0' <= h && h <= '9':
				c |= h - '0'
			case 'A' <= h && h <= 'F':
				c |= h - 'A' + 10
			default:
				return "", false
			}
		}
		b.WriteByte(c)
		i += 2
	}
	return b.String(), true
}

func TestEscape(t *testing.T) {
	for name, want := range map[string]string{
		"shop.api":   "shop.api",
		".hidden":    "%2Ehidden",
		"..":         "%2E.",
		"a/b":        "a%2Fb",
		"50%":        "50%25",
		"with space": "with%20space",
		"a\\b":       "a%5Cb",
	} {
		assert.Equal(t, want, escape(name), name)
	}
	long := escape(strings.Repeat("%", 200))
	assert.LessOrEqual(t, len(long), maxEscaped)
	assert.Contains(t, long, "~")
	assert.NotEqual(t, long, escape(strings.Repeat("%", 199)+"#"))
}

// FuzzEscape: escaping is one to one, and never makes a path, a hidden
// file, or a name too long for a file system.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", ".", "..", "a/b", "%2F", ".x", "x.", "~", strings.Repeat("é", 100), "a b\\c"} {
		f.Add(s, s+"x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ea, eb := escape(a), escape(b)
		for _, e := range []string{ea, eb} {
			if strings.ContainsAny(e, "/\\\x00") || (e != "" && e[0] == '.') || e == ".." {
				t.Fatalf("escape gave %q", e)
			}
			if len(e) > maxEscaped {
				t.Fatalf("escape gave %d bytes", len(e))
			}
		}
		if a != b && ea == eb {
			t.Fatalf("%q and %q both escape to %q", a, b, ea)
		}
		if !strings.Contains(ea, "~") {
			if back, ok := unescape(ea); !ok || back != a {
				t.Fatalf("%q escapes to %q, which reads back as %q", a, ea, back)
			}
		}
		if validateName(a) == nil && (a == "" || a == "." || a == ".." || strings.ContainsAny(a, "/\\")) {
			t.Fatalf("checkName let %q through", a)
		}
	})
}

// fuzzRunner opens a runner for a fuzz target whose inputs go through the
// handler: requests for sessions that do not exist start nothing.
func fuzzRunner(f *testing.F) *Runner {
	r, err := Open(f.TempDir(), Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(f, err)
	f.Cleanup(func() { r.Close() })
	return r
}

// serveFuzz sends a request through the runner's handler and checks the
// answer is one the API has: status among want, a JSON error body.
func serveFuzz(t *testing.T, r *Runner, method, path string, body []byte, want ...int) {
	t.Helper()
	u, err := url.Parse("http://runner" + path)
	require.NoError(t, err)
	// Made by hand: NewRequest refuses what a client on the wire may send.
	req := (&http.Request{Method: method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
		Host: "runner", RemoteAddr: "192.0.2.1:1234", Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))})
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	r.Handler().ServeHTTP(w, req)
	if !assert.Contains(t, want, w.Code, "%s %s %q: %s", method, path, body, w.Body) {
		return
	}
	if w.Code != http.StatusOK {
		var e runnerapi.ErrorBody
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e), "%s", w.Body)
		require.NotEmpty(t, e.Error)
	}
}

// FuzzDecodeStart: no body makes decoding panic; what decodes is a start
// the checks accept; through the handler, a bad body is a 400, a good one
// for a session that does not exist a 404.
func FuzzDecodeStart(f *testing.F) {
	r := fuzzRunner(f)
	f.Add([]byte(`{"session":"s","plugin":"api","project":"shop","command":["/bin/true"],"env":{"A":"b"},"dir":"/tmp","stopSignal":"SIGINT","ready":{"tcp":"127.0.0.1:1","timeoutMillis":100}}`))
	f.Add([]byte(`{"session":"s","plugin":"p","command":["x"],"ready":{"http":"http://x/","exec":["y"]}}`))
	f.Add([]byte(`{"session":"s","plugin":"p","command":["x"],"nope":1}`))
	f.Add([]byte(`{"command":null}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, body []byte) {
		var s runnerapi.Start
		err := decode(io.LimitReader(bytes.NewReader(body), runnerapi.MaxBody), &s, validateStart)
		if err == nil {
			require.NoError(t, validateStart(&s))
			require.NotEmpty(t, s.Command)
			serveFuzz(t, r, "POST", "/v1/instances/fuzz/start", body, http.StatusNotFound)
			return
		}
		serveFuzz(t, r, "POST", "/v1/instances/fuzz/start", body, http.StatusBadRequest)
	})
}

// FuzzDecodeStop: as FuzzDecodeStart, for stops.
func FuzzDecodeStop(f *testing.F) {
	r := fuzzRunner(f)
	f.Add([]byte(`{"session":"s","generation":3,"shutdownTimeoutMillis":5000}`))
	f.Add([]byte(`{"session":"s","generation":-3}`))
	f.Add([]byte(`{"session":"","generation":1}`))
	f.Add([]byte(`{"session":"s","generation":1e99}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var s runnerapi.Stop
		if err := decode(bytes.NewReader(body), &s, validateStop); err == nil {
			require.Positive(t, s.Generation)
			serveFuzz(t, r, "POST", "/v1/instances/fuzz/stop", body, http.StatusNotFound)
			return
		}
		serveFuzz(t, r, "POST", "/v1/instances/fuzz/stop", body, http.StatusBadRequest)
	})
}

// FuzzDecodeOpenSession: a lease that decodes is one a timer takes.
func FuzzDecodeOpenSession(f *testing.F) {
	f.Add([]byte(`{"holder":"h","leaseMillis":15000}`))
	f.Add([]byte(`{"leaseMillis":-1}`))
	f.Add([]byte(`{"leaseMillis":9223372036854775807}`))
	f.Add([]byte(`{"holder":"\u0000"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var o runnerapi.OpenSession
		if err := decode(bytes.NewReader(body), &o, validateOpenSession); err == nil {
			require.GreaterOrEqual(t, o.LeaseMillis, int64(0))
			require.LessOrEqual(t, time.Duration(o.LeaseMillis), maxLease/time.Millisecond)
		}
	})
}

// FuzzRoute: any path gets an answer of the API, and an instance path
// with a name that is not one gets 400 before its body is read.
func FuzzRoute(f *testing.F) {
	r := fuzzRunner(f)
	for _, p := range []string{"/v1/status", "/v1/instances/../x/start", "/v1/instances/a%2Fb/stop", "/v1/instances/%2E%2E/start",
		"/v1/sessions/x/renew", "/v1/sessions//events", "/v1/instances//start", "/%zz", "/v1/instances/a/b/c/start"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		u, err := url.Parse("http://runner" + path)
		if err != nil || u.Host != "runner" || u.RawQuery != "" || u.Fragment != "" || !strings.HasPrefix(path, "/") {
			return
		}
		seg, err := httpapi.Split(u.EscapedPath())
		if err == nil && len(seg) >= 4 && seg[0] == "v1" && seg[1] == "instances" && (seg[len(seg)-1] == "start" || seg[len(seg)-1] == "stop") {
			if validateName(strings.Join(seg[2:len(seg)-1], "/")) != nil {
				serveFuzz(t, r, "POST", path, []byte(`{}`), http.StatusBadRequest)
				return
			}
		}
		for _, m := range []string{"GET", "POST", "DELETE"} {
			serveFuzz(t, r, m, path, nil, http.StatusOK, http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed)
		}
	})
}
