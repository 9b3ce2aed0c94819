package proc

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
)

// TestTerm: the init of the namespace stops a plugin whose term runs out,
// by itself (its stop signal to its group, SIGKILL after its stop
// timeout); a term set again in time keeps it running, and a term of 0
// ends the term. The init acts whether or not the process that set the
// term still runs: the host's freeze is cmd/graft's frozen_leader test.
func TestTerm(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	testsupport.NeedNamespace(t, s.Isolation().Err)
	start := func(script string) *Process {
		p, err := s.Start(Cmd{Argv: []string{"sh", "-c", script}, Dir: t.TempDir(), Isolate: true,
			StopSignal: syscall.SIGTERM, StopTimeout: 300 * time.Millisecond})
		require.NoError(t, err)
		t.Cleanup(func() {
			p.SignalGroup(syscall.SIGKILL)
			p.Reap()
		})
		return p
	}
	running := func(p *Process) bool {
		select {
		case <-p.Exited():
			return false
		default:
			return true
		}
	}
	ended := func(p *Process) Status {
		select {
		case <-p.Exited():
		case <-time.After(10 * time.Second):
			t.Fatal("its term ran out, and it runs on")
		}
		st, err := p.Reap()
		require.NoError(t, err)
		return st
	}

	p := start("exec sleep 60")
	for range 12 {
		require.NoError(t, p.SetTerm(200*time.Millisecond))
		time.Sleep(50 * time.Millisecond)
	}
	assert.True(t, running(p), "its term was set again in time")
	require.NoError(t, p.SetTerm(0))
	time.Sleep(400 * time.Millisecond)
	assert.True(t, running(p), "its term ended: no stop")
	require.NoError(t, p.SetTerm(50*time.Millisecond))
	assert.Equal(t, syscall.SIGTERM, ended(p).Signal, "its stop signal")

	stubborn := start("trap '' TERM; while :; do sleep 0.05; done")
	time.Sleep(100 * time.Millisecond) // its trap is set
	began := time.Now()
	require.NoError(t, stubborn.SetTerm(50*time.Millisecond))
	assert.Equal(t, syscall.SIGKILL, ended(stubborn).Signal, "killed after its stop timeout")
	assert.GreaterOrEqual(t, time.Since(began), 300*time.Millisecond, "not before its stop timeout")
}
