package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
)

// hostRole makes this test binary a host of its own, for the tests that
// kill it: it starts the isolated plugin the test names and prints its
// family's pids.
const hostRole = "GRAFT_PROC_TEST_HOST"

// family is the shell script of the tests' plugin: a child in its group
// and a daemon, double-forked into a session of its own, whose parent
// exits; it says "up" once both run.
const family = `sleep 60 & (setsid sleep 60 & ) ; echo up pid=$$; wait`

// startIsolated starts script in s's namespace, marked as a plugin's
// family is, and stops its family at the end of the test.
func startIsolated(t *testing.T, s *Spawner, script string, out *os.File) *Process {
	t.Helper()
	marker := fmt.Sprintf("GRAFT_INSTANCE_ID=%s-%d", t.Name(), time.Now().UnixNano())
	p, err := s.Start(Cmd{Argv: []string{"sh", "-c", script}, Dir: t.TempDir(), Env: append(os.Environ(), marker), Output: out,
		Marker: marker, Isolate: true})
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

// TestIsolated: an isolated process runs in its Spawner's namespace, under
// its init, and is known here by its real pid; its family, the daemon its
// init adopted included, is found (the daemon by its marker); its exit
// status comes through, and it stays a zombie, holding its pid, until
// Reap; the init stays, for the next.
func TestIsolated(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	testsupport.NeedNamespace(t, s.Isolation().Err)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	p := startIsolated(t, s, family+"; exit 7", w)
	w.Close()
	assert.True(t, p.Isolated())
	line, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err)
	inner, ok := strings.CutPrefix(strings.TrimSpace(line), "up pid=")
	require.True(t, ok, "it said %q", line)
	assert.Equal(t, inner, strconv.Itoa(innermostPid(p.Pid)), "its pid in its namespace")
	assert.NotEqual(t, inner, strconv.Itoa(p.Pid), "the pid here is its real pid")
	e, err := stat(p.Pid)
	require.NoError(t, err)
	assert.Equal(t, p.ns.pid, e.ppid, "its parent is its init")
	assert.Equal(t, p.Pid, e.pgid, "it leads a process group of its own")

	ms := waitFamilyOf(t, p, 2, 1) // the sleep in its group, the daemon out of it
	for _, m := range ms {
		if m.Pgid != p.Pid {
			d, err := stat(m.Pid)
			require.NoError(t, err)
			assert.Equal(t, p.ns.pid, d.ppid, "the daemon was adopted by the init")
		}
	}
	for _, m := range ms {
		require.NoError(t, m.Signal(syscall.SIGKILL))
	}
	select {
	case <-p.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("exit not seen")
	}
	for _, m := range ms {
		if m.Pgid != p.Pid {
			require.Eventually(t, func() bool { _, err := stat(m.Pid); return err != nil }, 5*time.Second, 5*time.Millisecond,
				"the init reaps the orphan it adopted: not even a zombie is left")
		}
	}
	e, err = stat(p.Pid)
	require.NoError(t, err, "unreaped until Reap")
	assert.True(t, e.zombie)
	assert.NoError(t, p.SignalGroup(syscall.SIGTERM))
	st, err := p.Reap()
	require.NoError(t, err)
	assert.Equal(t, Status{Code: 7}, st)
	assert.True(t, gonePid(p.Pid))
	assert.False(t, gonePid(p.ns.pid), "the init stays for the next plugin")
}

// TestIsolatedSignal: the status of an isolated process killed by a
// signal; the init ignores the signals its namespace sends it.
func TestIsolatedSignal(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	testsupport.NeedNamespace(t, s.Isolation().Err)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	p := startIsolated(t, s, "kill -TERM 1; kill -INT 1; kill -HUP 1; echo sent; sleep 60", w)
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "sent\n", line)
	time.Sleep(50 * time.Millisecond)
	assert.False(t, gonePid(p.ns.pid), "the init outlived its namespace's signals")
	require.NoError(t, p.Signal(syscall.SIGTERM))
	st, err := p.Reap()
	require.NoError(t, err)
	assert.Equal(t, Status{Code: -1, Signal: syscall.SIGTERM}, st)
}

// TestIsolatedStartErrors: a program that cannot run is an error as it is
// without a namespace, and leaves nothing behind in the namespace.
func TestIsolatedStartErrors(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	testsupport.NeedNamespace(t, s.Isolation().Err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(dir+"/noexec", []byte("\x7fELF garbage"), 0o755))
	in, err := s.namespace()
	require.NoError(t, err)
	before := childrenOf(os.Getpid())
	_, err = s.Start(Cmd{Argv: []string{"./noexec"}, Dir: dir, Isolate: true})
	assert.ErrorIs(t, err, syscall.ENOEXEC)
	var pe *os.PathError
	assert.True(t, errors.As(err, &pe), "%v", err)
	_, err = s.Start(Cmd{Argv: []string{"/bin/sh"}, Dir: dir + "/missing", Isolate: true})
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.ElementsMatch(t, before, childrenOf(os.Getpid()), "no new init")
	assert.Empty(t, childrenOf(in.pid), "no child of the init")
}

// TestKilledHostTakesTheFamily: a host killed with SIGKILL takes its
// isolated plugin's whole family with it, the daemon that left its group
// and session included, within 2 seconds; with no namespace, that daemon
// outlives it.
func TestKilledHostTakesTheFamily(t *testing.T) {
	s := NewSpawner()
	iso := s.Isolation()
	s.Close()
	testsupport.NeedNamespace(t, s.Isolation().Err)
	for _, tt := range []struct {
		name    string
		isolate bool
		user    bool
	}{
		{"namespace", true, false},
		{"user namespace", true, true},
		{"none", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var attr *syscall.SysProcAttr
			exe := os.Args[0]
			if tt.user {
				if os.Geteuid() != 0 {
					require.True(t, iso.User)
				} else {
					attr, exe = asNobody(t)
				}
			}
			pids, stop := startHost(t, exe, attr, tt.isolate)
			require.Len(t, pids, 4, "init, plugin, child, daemon")
			if tt.isolate {
				assert.NotEqual(t, nsOf(t, os.Getpid(), "pid"), nsOf(t, pids[1], "pid"), "the plugin has a PID namespace of its own")
				assert.Equal(t, tt.user || os.Geteuid() != 0, nsOf(t, os.Getpid(), "user") != nsOf(t, pids[1], "user"),
					"a user namespace, unless its host is root")
			}
			stop()
			killed := time.Now()
			if !tt.isolate {
				// The parent-death signal reaches the plugin alone.
				testsupport.WaitGone(t, 2500*time.Millisecond, pids[1])
				time.Sleep(100 * time.Millisecond)
				assert.False(t, gonePid(pids[2]), "without a namespace the plugin's child outlives its host")
				assert.False(t, gonePid(pids[3]), "without a namespace the daemon outlives its host")
				syscall.Kill(pids[2], syscall.SIGKILL)
				syscall.Kill(pids[3], syscall.SIGKILL)
				testsupport.WaitGone(t, 5*time.Second, pids[2:]...)
				return
			}
			testsupport.WaitGone(t, 2500*time.Millisecond, pids...)
			t.Logf("the whole family was gone %s after the kill", time.Since(killed).Round(time.Millisecond))
		})
	}
}

// startHost starts this binary as a host of an isolated plugin (or not),
// as exe with attr, and returns the pids it prints (its init, unless not
// isolated; the plugin; the plugin's child; its daemon) and a func that
// kills it with SIGKILL.
func startHost(t *testing.T, exe string, attr *syscall.SysProcAttr, isolate bool) ([]int, func()) {
	t.Helper()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), hostRole+"="+strconv.FormatBool(isolate), "GORACE=atexit_sleep_ms=0")
	cmd.SysProcAttr = attr
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var pids []int
	defer func() {
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			for _, pid := range pids {
				if pid > 0 {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the host said nothing")
	for _, f := range strings.Fields(line) {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err, "the host said %q", line)
		pids = append(pids, pid)
	}
	go io.Copy(io.Discard, stdout)
	for _, pid := range pids {
		require.True(t, pid == 0 || !gonePid(pid), "%d runs before the kill", pid)
	}
	return pids, func() {
		require.NoError(t, cmd.Process.Kill())
		cmd.Wait()
	}
}

// hostMain starts the plugin of the kill tests and prints its init's
// pid (0 without one), its own, its child's and its daemon's, then waits
// to be killed.
func hostMain(isolate bool) {
	r, err := StartReaper()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer r.Stop()
	s := NewSpawner()
	p, err := s.Start(Cmd{Argv: []string{"sh", "-c", family}, Dir: os.TempDir(), Env: append(os.Environ(), "GRAFT_INSTANCE_ID=kill-test"),
		Marker: "GRAFT_INSTANCE_ID=kill-test", Isolate: isolate})
	if err != nil || p.Isolated() != isolate {
		fmt.Fprintln(os.Stderr, "start:", err, p)
		os.Exit(1)
	}
	pids := []int{0, p.Pid}
	if p.ns != nil {
		pids[0] = p.ns.pid
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		ms, _ := p.Family()
		var child, daemon int
		for _, m := range ms {
			if m.Pgid == p.Pid {
				child = m.Pid
			} else {
				daemon = m.Pid
			}
		}
		if len(ms) == 2 && child != 0 && daemon != 0 {
			pids = append(pids, child, daemon)
			break
		}
	}
	var f []string
	for _, pid := range pids {
		f = append(f, strconv.Itoa(pid))
	}
	fmt.Println(strings.Join(f, " "))
	select {}
}

// asNobody returns the process attributes of a child that runs as nobody,
// and a copy of this test binary that nobody may run.
func asNobody(t *testing.T) (*syscall.SysProcAttr, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "graft-proc-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	exe := filepath.Join(dir, "proc.test")
	b, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(exe, b, 0o755))
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}, exe
}

// nsOf names the namespace of kind that pid is in.
func nsOf(t *testing.T, pid int, kind string) string {
	t.Helper()
	link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, kind))
	require.NoError(t, err)
	return link
}

// gonePid reports whether pid names no live process: none, or a zombie.
func gonePid(pid int) bool {
	e, err := stat(pid)
	return err != nil || e.zombie
}

// TestSnapshotLeavesThreadsOut: the process table brought up to date pid
// by pid holds processes alone: /proc answers for a thread's id too, with
// its process's parent and environment, and an init's threads (it is a Go
// program) once passed for members of its plugin's family.
func TestSnapshotLeavesThreadsOut(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	testsupport.NeedNamespace(t, s.Isolation().Err)
	_, err := snapshot()
	require.NoError(t, err)
	p := startIsolated(t, s, "exec sleep 60", nil)
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.ns.pid))
	require.NoError(t, err)
	require.Greater(t, len(tasks), 1, "the init has threads")
	in := map[int]bool{}
	require.NoError(t, withSnapshot(func(tbl *procs) {
		for _, task := range tasks {
			tid, _ := strconv.Atoi(task.Name())
			_, in[tid] = tbl.entries[tid]
		}
	}))
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		assert.Equal(t, tid == p.ns.pid, in[tid], "%d: the init, not its other threads", tid)
	}
	assert.Empty(t, mustFamily(t, p))
}
