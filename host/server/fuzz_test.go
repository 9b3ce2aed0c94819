//go:build linux

package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/host"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/httpapi"
	"github.com/graftland/graft/spec"
)

// FuzzAPI: whatever the method, path, type and body, the host's API
// (behind the guard of its socket) never panics the process, and answers
// a status of the API: an error answer with a JSON body that says what
// is wrong, or an answer of the route. Requests that would start a
// plugin are not sent: the fuzzer's commands are not run.
func FuzzAPI(f *testing.F) {
	dir := f.TempDir()
	h, err := host.Open(filepath.Join(dir, ".graft"), host.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(f, err)
	f.Cleanup(func() { h.Shutdown(context.Background()) })
	api := (&server{h: h, log: h.Log()}).api("")

	src, _ := json.Marshal(hostapi.ApplyRequest{Source: hostapi.Source{File: filepath.Join(dir, "plugins.yaml"), Dir: dir, YAML: "name: shop\nplugins: {}\n"}, Holder: "fuzz"})
	for _, seed := range []struct {
		method, path, ctype string
		body                string
	}{
		{"GET", "/v1/status", "", ""},
		{"GET", "/v1/status?watch=1", "", ""},
		{"POST", "/v1/apply", "application/json", string(src)},
		{"POST", "/v1/apply", "application/json", `null`},
		{"POST", "/v1/apply", "application/json", `{}`},
		{"POST", "/v1/apply", "application/json", `{"source":{"yaml":"plugins: {a: {command: [x]}}"}}`},
		{"POST", "/v1/apply", "text/plain", `{}`},
		{"POST", "/v1/restart", "application/json", `{"restart":["db"]}`},
		{"POST", "/v1/restart", "application/json", `{"restart":["db"],"lockWait":-5}`},
		{"POST", "/v1/down", "application/json", `{"holder":"fuzz","parallelism":3}`},
		{"POST", "/v1/down", "application/json", `{"plan":{"format":"graft.plan/v1"}}`},
		{"GET", "/v1/logs/db?n=-1&follow=1", "", ""},
		{"GET", "/v1/logs/..%2Fhost", "", ""},
		{"GET", "/v1/leader/db", "", ""},
		{"DELETE", "/v1/status", "", ""},
		{"GET", "/v1//status", "", ""},
		{"GET", "/%zz", "", ""},
		{"PUT", "/v1/apply", "application/json", `[1,2]`},
	} {
		f.Add(seed.method, seed.path, seed.ctype, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, method, path, ctype string, body []byte) {
		u, err := url.Parse("http://graft" + path)
		if err != nil || u.Host != "graft" || !strings.HasPrefix(path, "/") || !validMethod(method) {
			return // no client can send it: net/http refuses it before the API
		}
		if startsSomething(body) {
			return
		}
		req := (&http.Request{Method: method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
			Host: "graft", RemoteAddr: "@", Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))})
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		ctx, cancel := context.WithCancel(context.Background())
		seg, _ := httpapi.Split(u.EscapedPath())
		watch := method == http.MethodGet && slices.Equal(seg, []string{"v1", "status"}) && u.Query().Get("watch") == "1"
		if watch { // a watch of the status goes on until its client goes
			ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
		}
		defer cancel()
		req = req.WithContext(ctx)
		w := httptest.NewRecorder()
		api.ServeHTTP(w, req)
		checkAnswer(t, method, path, body, w, watch)
	})
}

// checkAnswer checks that w holds an answer of the API.
func checkAnswer(t *testing.T, method, path string, body []byte, w *httptest.ResponseRecorder, watch bool) {
	t.Helper()
	switch w.Code {
	case http.StatusOK:
		if w.Header().Get("Content-Type") != "application/x-ndjson" {
			return
		}
		if watch { // statuses, one a line, and no end
			sc := bufio.NewScanner(w.Body)
			sc.Buffer(nil, hostapi.MaxBody)
			for sc.Scan() {
				var st hostapi.Status
				require.NoError(t, json.Unmarshal(sc.Bytes(), &st), "%s %s: %s", method, path, sc.Bytes())
			}
			return
		}
		// A stream: JSON messages, the last one its end.
		var last hostapi.Message
		sc := bufio.NewScanner(w.Body)
		sc.Buffer(nil, hostapi.MaxBody)
		for sc.Scan() {
			require.NoError(t, json.Unmarshal(sc.Bytes(), &last), "%s %s %q: %s", method, path, body, sc.Bytes())
		}
		require.Equal(t, hostapi.MsgDone, last.Type, "%s %s %q: the stream has no end", method, path, body)
	case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed,
		http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		var eb hostapi.ErrorBody
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &eb), "%s %s %q: %d %s", method, path, body, w.Code, w.Body)
		require.NotEmpty(t, eb.Error, "%s %s %q: %d %s", method, path, body, w.Code, w.Body)
	default:
		t.Fatalf("%s %s %q: status %d: %s", method, path, body, w.Code, w.Body)
	}
}

// validMethod reports whether net/http would pass m to a handler: a
// token of the RFC's characters.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// startsSomething reports whether body asks for a plugin to be started:
// a spec with plugins, or a saved plan with steps.
func startsSomething(body []byte) bool {
	var req hostapi.ApplyRequest
	if json.Unmarshal(body, &req) != nil {
		return false
	}
	var p struct{ Steps []json.RawMessage }
	if json.Unmarshal(req.Plan, &p) == nil && len(p.Steps) > 0 {
		return true
	}
	if req.Source.YAML == "" {
		return false
	}
	src := spec.Source(req.Source)
	s, err := src.Spec() // as the host reads it
	return err == nil && len(s.Plugins) > 0
}
