package proc

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
)

// TestIsolatedShareANamespace: the isolated processes of a Spawner share
// one PID namespace, not this process's, under one init; a daemon left by
// one of them is not in another's family; Close ends the init, and the
// kernel kills what is left of the namespace.
func TestIsolatedShareANamespace(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	testsupport.NeedNamespace(t, s.Isolation().Err)
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
	testsupport.WaitGone(t, 2*time.Second, pids...)
	st, err := b.Reap()
	require.NoError(t, err)
	assert.Equal(t, Status{Code: -1, Signal: syscall.SIGKILL}, st, "killed with its namespace")
}

// TestIsolatedInitDies: when the init dies, the kernel kills its plugins
// (whose status says SIGKILL), and the next start makes a new namespace.
func TestIsolatedInitDies(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	testsupport.NeedNamespace(t, s.Isolation().Err)
	a := startIsolated(t, s, "exec sleep 60", nil)
	old := nsOf(t, a.Pid, "pid")
	require.NoError(t, syscall.Kill(a.ns.pid, syscall.SIGKILL))
	// No start or reap waits for it: its watcher sees it end, and reaps
	// it, at once.
	deadline := time.Now().Add(5 * time.Second)
	for !a.ns.ended() || pidExists(a.ns.pid) {
		require.True(t, time.Now().Before(deadline), "the dead init was not reaped")
		time.Sleep(5 * time.Millisecond)
	}
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

// TestIsolatedConcurrent: starts and reaps from many goroutines at once
// share the init's socket; each gets its own answer (a plugin's exit
// code is its own), whichever goroutine read it.
func TestIsolatedConcurrent(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	testsupport.NeedNamespace(t, s.Isolation().Err)
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				code := (g*8 + i) % 100
				env := os.Environ()
				if i%4 == 0 {
					env = append(env, "BIG="+strings.Repeat("y", chunk+g)) // two messages
				}
				p, err := s.Start(Cmd{Argv: []string{"sh", "-c", "exit " + strconv.Itoa(code)}, Dir: dir, Env: env, Isolate: true})
				if err != nil {
					errs <- err
					return
				}
				st, err := p.Reap()
				if err == nil && st != (Status{Code: code}) {
					err = fmt.Errorf("plugin %d: status %+v", code, st)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestIsolatedLargeSpec: a start whose environment is larger than one
// message of the init's socket arrives whole.
func TestIsolatedLargeSpec(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	testsupport.NeedNamespace(t, s.Isolation().Err)
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
		{Path: "/bin/id", Argv: []string{"id"}, Env: []string{}, Cred: &Cred{Uid: 65534, Gid: 65534, Groups: []uint32{}}},
		{Path: "/bin/id", Argv: []string{"id"}, Env: []string{}, Cred: &Cred{Uid: 1, Gid: 2, Groups: []uint32{3, 4}}},
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

// pidExists reports whether pid is in the process table, a zombie or not.
func pidExists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}
