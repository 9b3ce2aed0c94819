//go:build linux

package runner

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/dirlock"
	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/runnerapi"
)

// TestAuth: without the token, or with another, every route answers 401
// and does nothing; the refusal is logged without the token.
func TestAuth(t *testing.T) {
	const token = "s3cret-token"
	h := newHarness(t, Options{Lease: 5 * time.Second, Grace: testGrace, Token: token})
	sess := h.open(0) // h's client has the token

	for _, bad := range []string{"", "wrong", token + "x", strings.ToUpper(token)} {
		c := newClient(t, h.srv.URL, bad, h.srv.Client())
		for _, r := range []struct {
			method, path string
			body         any
		}{
			{"POST", "/v1/sessions", runnerapi.OpenSession{}},
			{"POST", "/v1/instances/auth/start", plugin(t, sess, "cooperative")},
			{"POST", "/v1/instances/auth/stop", runnerapi.Stop{Session: sess, Generation: 1}},
			{"POST", "/v1/sessions/" + sess + "/renew", nil},
			{"DELETE", "/v1/sessions/" + sess, nil},
			{"GET", "/v1/sessions/" + sess + "/events", nil},
			{"GET", "/v1/status", nil},
			{"GET", "/nowhere", nil},
		} {
			req, err := http.NewRequest(r.method, h.srv.URL+r.path, nil)
			require.NoError(t, err)
			if bad != "" {
				req.Header.Set("Authorization", "Bearer "+bad)
			}
			resp, err := h.srv.Client().Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s %s", r.method, r.path)
			assert.Equal(t, "Bearer", resp.Header.Get("WWW-Authenticate"))
			status, e := c.call(r.method, r.path, r.body, nil)
			assert.Equal(t, http.StatusUnauthorized, status)
			assert.Equal(t, runnerapi.KindUnauthorized, e.Kind)
		}
	}
	assert.Empty(t, marked(t), "nothing started")
	assert.Empty(t, h.status().Instances)
	assert.Equal(t, http.StatusOK, h.renew(sess), "the session is still there")
	log := h.log.String()
	assert.Contains(t, log, "refused a request with a bad or missing token")
	assert.Contains(t, log, "remote=127.0.0.1:")
	assert.NotContains(t, log, token)
	assert.NotContains(t, log, "wrong")

	st := h.start("auth", plugin(t, sess, "cooperative"))
	assert.Equal(t, int64(1), st.Generation)
}

// TestBrowsersAndTypes: with the token or without one, a request from a
// web browser gets 403, a POST that is not JSON 415; neither has an
// effect.
func TestBrowsersAndTypes(t *testing.T) {
	for _, token := range []string{"", "s3cret-token"} {
		h := newHarness(t, Options{Lease: 5 * time.Second, Grace: testGrace, Token: token})
		sess := h.open(0)
		for _, c := range []struct {
			name    string
			path    string
			body    string
			headers []string
			status  int
			kind    string
		}{
			{"a cross-site form", "/v1/sessions", "holder=x", []string{"Content-Type", "application/x-www-form-urlencoded", "Origin", "https://evil.example"}, 403, guard.KindForbidden},
			{"a page's fetch", "/v1/instances/web/start", "{}", []string{"Content-Type", "application/json", "Sec-Fetch-Site", "cross-site"}, 403, guard.KindForbidden},
			{"text/plain", "/v1/sessions", `{"holder":"x"}`, []string{"Content-Type", "text/plain"}, 415, guard.KindMediaType},
			{"no type", "/v1/sessions/" + sess + "/renew", "", nil, 415, guard.KindMediaType},
		} {
			req, err := http.NewRequest("POST", h.srv.URL+c.path, strings.NewReader(c.body))
			require.NoError(t, err)
			for i := 0; i < len(c.headers); i += 2 {
				req.Header.Set(c.headers[i], c.headers[i+1])
			}
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := h.srv.Client().Do(req)
			require.NoError(t, err)
			var e runnerapi.ErrorBody
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			resp.Body.Close()
			assert.Equal(t, c.status, resp.StatusCode, "%s: %+v", c.name, e)
			assert.Equal(t, c.kind, e.Kind, c.name)
		}
		assert.Len(t, h.status().Sessions, 1, "no session opened")
		assert.Empty(t, h.status().Instances)
		assert.Contains(t, h.log.String(), "refused a request from a web browser")
	}
}

// TestBadNames: names that are not instance names are refused before
// anything happens, and no file appears outside the state dir.
func TestBadNames(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "state")
	h := newHarness(t, short, dir)
	sess := h.open(0)
	before := tree(t, parent)
	for _, path := range []string{
		"../x", "a%2Fb", "a/b", "..", "%2E%2E", ".", "%2E", "..%2F..%2Fescape", "%2E%2E%2Fx", "a%5Cb", "",
		"tab%09x", "nul%00", "caf%C3%A9", strings.Repeat("n", 201),
	} {
		for _, op := range []string{"start", "stop"} {
			var body any = plugin(t, sess, "cooperative")
			if op == "stop" {
				body = runnerapi.Stop{Session: sess, Generation: 1}
			}
			status, e := h.call("POST", "/v1/instances/"+path+"/"+op, body, nil)
			assert.Equal(t, http.StatusBadRequest, status, "%s %q: %+v", op, path, e)
			assert.Equal(t, runnerapi.KindBadRequest, e.Kind)
		}
	}
	assert.Equal(t, before, tree(t, parent), "no file made")
	assert.Empty(t, marked(t))

	// Odd names that are names have files of their own.
	for _, name := range []string{".hidden", "a.b", "%41", "A", "with space", "x~y", strings.Repeat("%", 200)} {
		st := h.start(escapePath(name), plugin(t, sess, "cooperative"))
		assert.Equal(t, int64(1), st.Generation, name)
	}
	gens := journalOf(t, dir).last
	assert.Len(t, gens, 7)
	for _, name := range []string{".hidden", "a.b", "%41", "A", "with space", "x~y", strings.Repeat("%", 200)} {
		assert.Equal(t, int64(1), gens[name], name)
	}
}

// escapePath escapes a name for a path, every byte but letters and
// digits, so nothing is cleaned on the way.
func escapePath(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
		}
	}
	return b.String()
}

// tree lists every path under dir.
func tree(t *testing.T, dir string) []string {
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		out = append(out, path)
		return err
	}))
	sort.Strings(out)
	return out
}

// TestBadBodies: malformed bodies are refused with 400, one over runnerapi.MaxBody
// with 413.
func TestBadBodies(t *testing.T) {
	h := newHarness(t, short)
	sess := h.open(0)
	for body, want := range map[string]int{
		`{"session":"` + sess + `","plugin":"p","command":["x"],"dir":"` + strings.Repeat("d", runnerapi.MaxBody) + `"}`: http.StatusRequestEntityTooLarge,
	} {
		req, err := http.NewRequest("POST", h.srv.URL+"/v1/instances/body/start", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := h.srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, "%.100s", body)
	}
	for _, body := range []string{
		``, `{`, `[]`, `null`, `{"session":"` + sess + `","plugin":"p","command":["x"],"unknown":1}`,
		`{"session":"` + sess + `","plugin":"p","command":[]}`,
		`{"session":"` + sess + `","plugin":"p","command":["x"],"stopSignal":"SIGNOPE"}`,
		`{"session":"` + sess + `","plugin":"p","command":["x"],"ready":{"tcp":"a:1","http":"http://a"}}`,
		`{"session":"` + sess + `","plugin":"p","command":["x"],"env":{"A=B":"c"}}`,
		`{"session":"` + sess + `","plugin":"p","command":["x\u0000"]}`,
		`{"session":"` + sess + `","plugin":"p","command":["x"]} {}`,
	} {
		req, err := http.NewRequest("POST", h.srv.URL+"/v1/instances/body/start", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := h.srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%.100s", body)
	}
	assert.Empty(t, h.status().Instances)
}

// TestSecondRunner: a state dir has one runner at a time.
func TestSecondRunner(t *testing.T) {
	h := newHarness(t, short)
	_, err := Open(h.dir, short)
	held, ok := errorsAs[*dirlock.HeldError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, os.Getpid(), held.PID)
	assert.Equal(t, "runner", held.Holder)
	assert.Contains(t, err.Error(), "another runner (pid ")
	assert.Equal(t, fmt.Sprintf("stop it (kill -TERM %d), or give this graft runner another --state-dir", os.Getpid()), held.Hint())
}

// TestListen: a runner listens on TCP only with a token, loopback
// included; without one, on a unix socket only, which is its owner's
// alone.
func TestListen(t *testing.T) {
	for addr, ok := range map[string]bool{
		"tcp://0.0.0.0:7070":   false,
		"tcp://:7070":          false,
		"tcp://10.1.2.3:7070":  false,
		"tcp://[::]:7070":      false,
		"tcp://example.com:70": false,
		"tcp://127.0.0.1:7070": false,
		"tcp://[::1]:7070":     false,
		"tcp://localhost:7070": false,
		"unix:///run/x.sock":   true,
		"http://127.0.0.1:1":   false,
		"unix://":              false,
		"tcp://127.0.0.1":      false,
	} {
		_, _, err := ParseListen(addr, "")
		assert.Equal(t, ok, err == nil, "%s: %v", addr, err)
	}
	_, _, err := ParseListen("tcp://127.0.0.1:7070", "")
	var need *guard.TokenRequiredError
	require.ErrorAs(t, err, &need)
	assert.EqualError(t, err, "graft runner --listen tcp://127.0.0.1:7070: a TCP listener requires a token, loopback included: --token-file FILE")
	assert.Contains(t, need.Hint(), "--token-file")
	for _, addr := range []string{"tcp://0.0.0.0:7070", "tcp://127.0.0.1:7070", "tcp://[::1]:7070"} {
		_, _, err = ParseListen(addr, "tok")
		assert.NoError(t, err, addr)
	}

	path := filepath.Join(t.TempDir(), "r.sock")
	ln, err := ListenConfig{Addr: "unix://" + path}.Listen()
	require.NoError(t, err)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
	_, err = ListenConfig{Addr: "unix://" + path}.Listen()
	assert.ErrorContains(t, err, "answers there already")
	ln.Close()
}

// TestTLS: a runner over TLS with a certificate of a CA made here; with
// --client-ca, a client without a certificate that CA signed is refused.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	testsupport.WriteCerts(t, dir)
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	client, err := tls.LoadX509KeyPair(filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key"))
	require.NoError(t, err)
	other, err := tls.LoadX509KeyPair(filepath.Join(dir, "other-client.pem"), filepath.Join(dir, "other-client.key"))
	require.NoError(t, err)

	for _, withCA := range []bool{false, true} {
		clientCA := ""
		if withCA {
			clientCA = filepath.Join(dir, "ca.pem")
		}
		conf, err := TLSConfig(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), clientCA)
		require.NoError(t, err)
		opt := short
		opt.Logger = slog.New(slog.DiscardHandler)
		r, err := Open(t.TempDir(), opt)
		require.NoError(t, err)
		srv := httptest.NewUnstartedServer(r.Handler())
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
		srv.TLS = conf
		srv.StartTLS()

		get := func(certs ...tls.Certificate) error {
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs, ServerName: "127.0.0.1"}}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/v1/status")
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return errors.New(resp.Status)
			}
			return nil
		}
		assert.NoError(t, get(client), "with a client certificate")
		if withCA {
			assert.Error(t, get(), "without a client certificate")
			assert.Error(t, get(other), "with a certificate of another CA")
		} else {
			assert.NoError(t, get(), "no client certificate asked for")
		}
		// A client that does not trust the CA refuses the runner.
		tr := &http.Transport{}
		_, err = (&http.Client{Transport: tr}).Get(srv.URL + "/v1/status")
		assert.Error(t, err)
		tr.CloseIdleConnections()
		srv.Close()
		require.NoError(t, r.Close())
	}
	_, err = TLSConfig(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), filepath.Join(dir, "server.key"))
	assert.ErrorContains(t, err, "no PEM certificate")
}
