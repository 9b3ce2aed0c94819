package proc

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIsolatedShareANamespace: the isolated processes of a Spawner share
// one PID namespace, not this process's, under one init; a daemon left by
// one of them is not in another's family; Close ends the init, and the
// kernel kills what is left of the namespace.
func TestIsolatedShareANamespace(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	needIsolation(t, s)
	a := startIsolated(t, s, family, nil)
	b := startIsolated(t, s, "exec sleep 60", nil)
	assert.Same(t, a.ns, b.ns, "one init")
	assert.Equal(t, nsOf(t, a.Pid, "pid"), nsOf(t, b.Pid, "pid"), "one namespace")
	assert.NotEqual(t, nsOf(t, os.Getpid(), "pid"), nsOf(t, a.Pid, "pid"), "not this process's")
	ms := waitFamilyOf(t, a, 2, 1)
	assert.Empty(t, mustFamily(t, b), "another plugin's daemon is not b's")
	init := a.ns.pid
	s.Close()
	pids := []int{init, a.Pid, b.Pid}
	for _, m := range ms {
		pids = append(pids, m.Pid)
	}
	waitGone(t, 2*time.Second, pids...)
	st, err := b.Reap()
	require.NoError(t, err)
	assert.Equal(t, Status{Code: -1, Signal: syscall.SIGKILL}, st, "killed with its namespace")
}

// TestIsolatedInitDies: when the init dies, the kernel kills its plugins
// (whose status says SIGKILL), and the next start makes a new namespace.
func TestIsolatedInitDies(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	needIsolation(t, s)
	a := startIsolated(t, s, "exec sleep 60", nil)
	old := nsOf(t, a.Pid, "pid")
	require.NoError(t, syscall.Kill(a.ns.pid, syscall.SIGKILL))
	select {
	case <-a.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("the plugin outlived its init")
	}
	st, err := a.Reap()
	require.NoError(t, err)
	assert.Equal(t, Status{Code: -1, Signal: syscall.SIGKILL}, st)
	b := startIsolated(t, s, "exec sleep 60", nil)
	assert.NotSame(t, a.ns, b.ns, "a new init")
	assert.NotEqual(t, old, nsOf(t, b.Pid, "pid"), "a new namespace")
}

// TestIsolatedLargeSpec: a start whose environment is larger than one
// message of the init's socket arrives whole.
func TestIsolatedLargeSpec(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	needIsolation(t, s)
	big := "BIG=" + strings.Repeat("x", 3*chunk+17)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	p, err := s.Start(Cmd{Argv: []string{"sh", "-c", `printf '%s\n' "${#BIG}"`}, Dir: t.TempDir(),
		Env: append(os.Environ(), big), Output: w, Isolate: true})
	w.Close()
	require.NoError(t, err)
	line, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(len(big)-len("BIG="))+"\n", line)
	st, err := p.Reap()
	require.NoError(t, err)
	assert.Equal(t, Status{}, st)
}

// TestSpecRoundTrip: a spec reads back as written, empty strings and an
// empty environment included, and a spec cut short is refused.
func TestSpecRoundTrip(t *testing.T) {
	for _, s := range []initSpec{
		{Path: "/bin/sh", Argv: []string{"sh", "-c", "echo $A"}, Dir: "/tmp", Env: []string{"A=1", "B="}},
		{Path: "/bin/true", Argv: []string{""}, Env: []string{}},
	} {
		got, err := decodeSpec(s.encode())
		require.NoError(t, err)
		if len(s.Env) == 0 {
			s.Env = []string{}
		}
		assert.Equal(t, s, got)
	}
	b := initSpec{Path: "/bin/sh", Argv: []string{"sh"}, Env: []string{"A=1"}}.encode()
	for _, cut := range []int{0, 3, len(b) - 1} {
		_, err := decodeSpec(b[:cut])
		assert.Error(t, err, "cut at %d", cut)
	}
}
