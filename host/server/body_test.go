//go:build linux

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/host"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/guard"
)

// TestLargeBodies: the host's API decodes a body over guard.LargeBody as it
// streams: a plan of a spec over 1 MiB is made, its turn ended; a body
// over hostapi.MaxBody that did not say its length is cut as it is
// decoded and answered 413, naming the limit.
func TestLargeBodies(t *testing.T) {
	dir := t.TempDir()
	h, err := host.Open(filepath.Join(dir, ".graft"), host.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { h.Shutdown(context.Background()) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: (&server{h: h, log: h.Log()}).api("")}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	post := func(path string, body io.Reader) (int, string) {
		req, err := http.NewRequest("POST", "http://"+ln.Addr().String()+path, body)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	yaml := "name: big\nplugins:\n  a: {command: [/bin/true]}\n# " + strings.Repeat("x", 2<<20) + "\n"
	body, _ := json.Marshal(hostapi.PlanRequest{Source: hostapi.Source{File: filepath.Join(dir, "plugins.yaml"), Dir: dir, YAML: yaml}})
	status, answer := post("/v1/plan", bytes.NewReader(body))
	require.Equal(t, http.StatusOK, status, answer)
	assert.Contains(t, answer, `"plugin": "a"`)
	assert.Zero(t, guard.LargeTurns(), "the plan's turn ended")

	// Chunked (io.MultiReader hides its length): only decoding finds it
	// too long.
	over := io.MultiReader(strings.NewReader(`{"source":{"yaml":"`), io.LimitReader(repeat('x'), hostapi.MaxBody), strings.NewReader(`"}}`))
	status, answer = post("/v1/plan", over)
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
	assert.Contains(t, answer, "the host refused the request: its body is over 32 MiB")
	assert.Zero(t, guard.LargeTurns())
}

// TestLargeApplyWaitsForTheLockWithoutItsTurn: a large apply's turn ends
// once its spec is parsed, so while it waits for the apply lock another
// large request (a plan) is read, parsed and answered; it does not wait
// out the body timeout for its turn.
func TestLargeApplyWaitsForTheLockWithoutItsTurn(t *testing.T) {
	dir := t.TempDir()
	h, err := host.Open(filepath.Join(dir, ".graft"), host.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { h.Shutdown(context.Background()) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &server{h: h, log: h.Log()}
	s.opt.Limits.BodyTimeout = 4 * time.Second // a 2 MiB body is parsed well within it, under -race on a busy machine too
	srv := &http.Server{Handler: s.api("")}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	post := func(path string, v any) (int, string) {
		body, _ := json.Marshal(v)
		req, err := http.NewRequest("POST", "http://"+ln.Addr().String()+path, bytes.NewReader(body))
		if err != nil {
			return 0, err.Error()
		}
		req.Header.Set("Content-Type", "application/json")
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: time.Minute}).Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	src := func(yaml string) hostapi.Source {
		return hostapi.Source{File: filepath.Join(dir, "plugins.yaml"), Dir: dir, YAML: yaml}
	}

	// An apply that holds the lock for 10 seconds: its plugin is never ready.
	slow := make(chan string, 1)
	go func() {
		_, answer := post("/v1/apply", hostapi.ApplyRequest{Source: src("name: t\nplugins:\n  slow: {command: [sleep, '60'], ready: {log: never, timeout: 10 seconds}}\n")})
		slow <- answer
	}()
	require.Eventually(t, func() bool {
		select {
		case a := <-slow:
			t.Fatalf("the slow apply ended: %s", a)
		default:
		}
		return h.Status().Host != nil && h.Status().Host.Applying != ""
	}, 10*time.Second, 10*time.Millisecond)

	big := src("name: t\nplugins:\n  a: {command: [/bin/true]}\n# " + strings.Repeat("x", 2<<20) + "\n")
	waiting := make(chan int, 1)
	go func() {
		status, _ := post("/v1/apply", hostapi.ApplyRequest{Source: big, LockWait: 30_000})
		waiting <- status
	}()
	time.Sleep(200 * time.Millisecond) // it is parsed, and waits for the lock

	status, answer := post("/v1/plan", hostapi.PlanRequest{Source: big})
	assert.Equal(t, http.StatusOK, status, "a large plan was answered while a large apply waited for the lock: %s", answer)
	assert.NotEmpty(t, h.Status().Host.Applying, "the slow apply still held the lock")
	assert.Contains(t, <-slow, "slow")
	assert.Equal(t, http.StatusOK, <-waiting)
	assert.Zero(t, guard.LargeTurns())
}

// repeat is an endless reader of c.
type repeat byte

func (r repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}
