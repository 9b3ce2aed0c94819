//go:build linux

package server

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/host"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
)

func TestMain(m *testing.M) {
	testsupport.PlayRole(roleEnv, runRole) // the test binary run again, as a host
	runtimetest.Main(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// timing is the stop windows of the tests' hosts: short.
var timing = runtime.Timing{ShutdownTimeout: time.Second, ExitWindow: 100 * time.Millisecond, KillAfter: 100 * time.Millisecond}

func open(t *testing.T, dir string) *host.Host {
	t.Helper()
	h, err := host.Open(dir, host.Options{Logger: quiet, Timing: timing})
	require.NoError(t, err)
	return h
}

// wire is the plugins file of dir holding yaml (testsupport.Source) as
// the API carries it.
func wire(dir, yaml string) hostapi.Source {
	return hostapi.Source(testsupport.Source(dir, yaml))
}

const twoSleeps = "name: shop\nplugins:\n  db: {command: [sleep, '60']}\n  api: {command: [sleep, '60'], uses: [db]}\n"

// serve serves h's API until the test ends, and returns a client of it.
func serve(t *testing.T, h *host.Host) *hostapi.Client {
	return serveWith(t, h, Options{})
}

// serveWith is serve with opt's listeners.
func serveWith(t *testing.T, h *host.Host, opt Options) *hostapi.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	ready := make(chan struct{})
	go func() { served <- Serve(ctx, h, opt, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-served:
		cancel()
		t.Fatal(err)
	}
	c, err := hostapi.NewClient(h.Dir())
	require.NoError(t, err)
	t.Cleanup(func() {
		c.Close()
		cancel()
		assert.NoError(t, <-served)
	})
	return c
}

// statuses is each plugin's status in st.
func statuses(st *hostapi.Status) map[string]plan.Status {
	out := map[string]plan.Status{}
	for _, r := range st.Plugins {
		out[r.Name] = plan.Status(r.Status)
	}
	return out
}
