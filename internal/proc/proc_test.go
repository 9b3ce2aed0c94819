//go:build linux

package proc

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(hostRole); role != "" {
		hostMain(role == "true")
		return
	}
	if os.Getenv(orphansRole) != "" {
		os.Exit(orphansMain())
	}
	goleak.VerifyTestMain(m)
}

func TestParseStat(t *testing.T) {
	e, ok := parseStat([]byte("4242 (we(i)rd) name) S 17 4242 4242 0 -1 4194560 115 0 0 0 0 0 0 0 20 0 1 0 987654 1234 56 ...\n"))
	require.True(t, ok)
	assert.Equal(t, entry{ppid: 17, pgid: 4242, start: 987654}, e)
	e, ok = parseStat([]byte("7 (z) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n"))
	require.True(t, ok)
	assert.True(t, e.zombie)
	_, ok = parseStat([]byte("garbage"))
	assert.False(t, ok)
}

// TestFlight: callers at the same time share runs, and each gets a run
// that began after it asked.
func TestFlight(t *testing.T) {
	var f flight[int64]
	var runs atomic.Int64
	var clock atomic.Int64
	fn := func() (int64, error) {
		began := clock.Add(1)
		runs.Add(1)
		time.Sleep(2 * time.Millisecond)
		return began, nil
	}
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			asked := clock.Load()
			began, err := f.do(fn)
			assert.NoError(t, err)
			assert.Greater(t, began, asked, "the run began after the call")
		}()
	}
	wg.Wait()
	assert.Less(t, runs.Load(), int64(20), "a hundred callers shared a few runs")
}

func start(t *testing.T, s *Spawner, script string) *Process {
	t.Helper()
	p, err := s.Start(Cmd{Argv: []string{"sh", "-c", script}, Dir: t.TempDir(), Env: append(os.Environ(), "GRAFT_INSTANCE_ID=test-marker"), Marker: "GRAFT_INSTANCE_ID=test-marker"})
	require.NoError(t, err)
	t.Cleanup(func() {
		p.SignalGroup(syscall.SIGKILL)
		for _, m := range mustFamily(t, p) {
			m.Signal(syscall.SIGKILL)
		}
		p.Reap()
	})
	return p
}

func mustFamily(t *testing.T, p *Process) []Member {
	t.Helper()
	ms, err := p.Family()
	require.NoError(t, err)
	return ms
}

// waitFamily waits until p's family has n members.
func waitFamily(t *testing.T, p *Process, n int) []Member {
	t.Helper()
	return waitFamilyOf(t, p, n, 0)
}

// waitFamilyOf waits until p's family has n members, left of them out of
// its process group. /proc tells of no change: this polls.
func waitFamilyOf(t *testing.T, p *Process, n, left int) []Member {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ms := mustFamily(t, p)
		out := 0
		for _, m := range ms {
			if m.Pgid != p.Pid {
				out++
			}
		}
		if len(ms) == n && out == left || time.Now().After(deadline) {
			require.Len(t, ms, n)
			require.Equal(t, left, out, "members out of the group")
			return ms
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFamily: children in the group, a descendant that left it with
// setsid, and processes created after an earlier look are all found, by
// whichever way the table was read.
func TestFamily(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	p := start(t, s, "sleep 60 & setsid sleep 60 & wait")
	// Both children, one of them once it called setsid: it left the
	// group, and is still family.
	ms := waitFamilyOf(t, p, 2, 1)

	// A look after more processes were made finds them too (the snapshot
	// is brought up to date with just the new pids).
	q := start(t, s, "sleep 60 & sleep 60 & sleep 60 & wait")
	waitFamily(t, q, 3)
	assert.Len(t, mustFamily(t, p), 2, "another plugin's processes are not p's")

	// Kill the setsid one: the next look drops it.
	for _, m := range ms {
		if m.Pgid != p.Pid {
			require.NoError(t, m.Signal(syscall.SIGKILL))
		}
	}
	waitFamily(t, p, 1)
}

// TestSignalAfterExit: a process that exited is a zombie until Reap, and
// its group id stays safe to signal; after Reap, signalling does nothing.
func TestSignalAfterExit(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	p, err := s.Start(Cmd{Argv: []string{"sh", "-c", "exit 7"}, Dir: t.TempDir(), Env: os.Environ()})
	require.NoError(t, err)
	select {
	case <-p.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("exit not seen")
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/stat")
	require.NoError(t, err, "unreaped until Reap")
	assert.Contains(t, string(b), ") Z ")
	assert.NoError(t, p.SignalGroup(syscall.SIGTERM))
	assert.NoError(t, p.Signal(syscall.SIGTERM))
	st, err := p.Reap()
	require.NoError(t, err)
	assert.Equal(t, Status{Code: 7}, st)
	again, err := p.Reap()
	require.NoError(t, err)
	assert.Equal(t, st, again, "Reap is idempotent")
	assert.NoError(t, p.SignalGroup(syscall.SIGKILL))
}

func TestStartErrors(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	_, err := s.Start(Cmd{Argv: []string{"graft-no-such"}, Env: []string{"PATH=/nonexistent"}})
	assert.ErrorContains(t, err, "executable file not found in $PATH")
	_, err = s.Start(Cmd{Argv: []string{"./nope"}, Dir: t.TempDir()})
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = s.Start(Cmd{})
	assert.ErrorContains(t, err, "empty command")
	// The child's PATH, not this process's, finds the program.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(dir+"/hello", []byte("#!/bin/sh\nexit 3\n"), 0o755))
	p, err := s.Start(Cmd{Argv: []string{"hello"}, Dir: t.TempDir(), Env: []string{"PATH=" + dir}})
	require.NoError(t, err)
	st, err := p.Reap()
	require.NoError(t, err)
	assert.Equal(t, 3, st.Code)
}

// TestRunBesideAReaper: a child started by os/exec through Run is left to
// its own Wait by this process's Reaper, which reaps every other child it
// finds exited.
func TestRunBesideAReaper(t *testing.T) {
	r, err := StartReaper()
	require.NoError(t, err)
	defer r.Stop()
	for i := range 100 {
		require.NoError(t, Run(exec.Command("true")), "run %d", i)
	}
}

// TestReaper: an orphan adopted by this process (a subreaper) is reaped
// when it exits; a child a Spawner started is left to its owner.
func TestReaper(t *testing.T) {
	r, err := StartReaper()
	require.NoError(t, err)
	defer r.Stop()
	s := NewSpawner()
	defer s.Close()
	out, w, err := os.Pipe()
	require.NoError(t, err)
	defer out.Close()
	// The shell exits at once; its child, a sleep, is adopted here.
	p, err := s.Start(Cmd{Argv: []string{"sh", "-c", "sleep 0.2 >/dev/null & echo $!"}, Dir: t.TempDir(), Env: os.Environ(), Output: w})
	w.Close()
	require.NoError(t, err)
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	orphan, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	require.NoError(t, err)
	st, err := p.Reap()
	require.NoError(t, err, "the owner reaps its own child")
	assert.Equal(t, 0, st.Code)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat("/proc/" + strconv.Itoa(orphan)); os.IsNotExist(err) {
			return // exited and reaped: no zombie
		}
		require.True(t, time.Now().Before(deadline), "orphan %d was not reaped", orphan)
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMarkedBy: one look finds the processes of several marks, each under
// the mark its environment holds; a mark nobody holds has none, and
// Marked lists the same processes together.
func TestMarkedBy(t *testing.T) {
	run := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	marks := []string{"GRAFT_TEST_MARK=a" + run, "GRAFT_TEST_MARK=b" + run, "GRAFT_TEST_MARK=c" + run}
	var pids []int
	for _, env := range [][]string{{marks[0]}, {marks[0]}, {marks[1]}, {"GRAFT_TEST_MARK=other" + run}} {
		cmd := exec.Command("sleep", "30")
		cmd.Env = env
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
		pids = append(pids, cmd.Process.Pid)
	}
	pidsOf := func(ms []Member) []int {
		var out []int
		for _, m := range ms {
			out = append(out, m.Pid)
		}
		return out
	}
	by, err := MarkedBy(marks)
	require.NoError(t, err)
	assert.ElementsMatch(t, pids[:2], pidsOf(by[marks[0]]))
	assert.ElementsMatch(t, pids[2:3], pidsOf(by[marks[1]]))
	assert.Empty(t, by[marks[2]])
	all, err := Marked(marks)
	require.NoError(t, err)
	assert.ElementsMatch(t, pids[:3], pidsOf(all))
}
