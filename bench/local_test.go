//go:build linux

package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/local"
	"github.com/graftland/graft/spec"
)

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Tail() []string              { return nil }

func sleepRequest(b *testing.B, i int) runtime.Request {
	sleep, err := exec.LookPath("sleep")
	require.NoError(b, err)
	return runtime.Request{
		Dir: os.TempDir(), Output: discard{},
	}.For(&spec.Plugin{Name: fmt.Sprintf("s%d", i), Run: spec.Local, Command: []string{sleep, "3600"}, StopSignal: "SIGTERM"})
}

// BenchmarkLocalStartStop200 starts 200 sleeps on a local placement, one
// after another, and stops them all (Close). bench/local.sh compares the
// same with supervisord and a bare fork/exec loop.
func BenchmarkLocalStartStop200(b *testing.B) {
	for b.Loop() {
		l := local.New(local.Options{})
		for i := range 200 {
			_, err := l.Start(context.Background(), sleepRequest(b, i))
			require.NoError(b, err)
		}
		require.NoError(b, l.Close())
	}
}

// BenchmarkLocalRestartOneOf200 stops one of 200 running sleeps and starts
// it again.
func BenchmarkLocalRestartOneOf200(b *testing.B) {
	l := local.New(local.Options{})
	defer l.Close()
	hs := make([]runtime.Handle, 200)
	for i := range hs {
		h, err := l.Start(context.Background(), sleepRequest(b, i))
		require.NoError(b, err)
		hs[i] = h
	}
	i := 0
	for b.Loop() {
		i = (i + 1) % len(hs)
		_, err := hs[i].Stop(context.Background())
		require.NoError(b, err)
		hs[i], err = l.Start(context.Background(), sleepRequest(b, i))
		require.NoError(b, err)
	}
}
