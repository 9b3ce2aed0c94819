//go:build linux

package local

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
)

// hostEnv makes this test binary a hosting process, as graft host is: a
// child subreaper that starts plugins and reaps what it adopts.
const hostEnv = "GRAFT_TEST_HOST"

// hostMain starts a stubborn plugin (from a thread that ends at once) and
// a daemonizing one, prints
// "plugin PID" and "daemon PID", then keeps its threads busy: goroutines
// that lock a thread and return make the Go runtime end that thread, as
// would happen to an ordinary spawning thread in a long-lived host. It
// prints "busy" when a hundred threads have come and gone, then waits to
// be killed.
func hostMain() {
	reaper, err := proc.StartReaper()
	if err != nil {
		fmt.Println("reaper:", err)
		os.Exit(1)
	}
	defer reaper.Stop()
	l := New(Options{Timing: short, NoNamespace: os.Getenv(hostEnv) == "no-namespace"})
	out := runtimetest.NewRecorder()
	// Start from a thread that then ends, as a host's request handler may
	// run on one: the plugin must not die with it.
	started := make(chan runtime.Handle)
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread ends with the goroutine
		h, err := l.Start(context.Background(), runtime.Request{Dir: os.TempDir(), Output: out}.For(helper("stubborn", "stubborn")))
		if err != nil {
			fmt.Println("start:", err)
			os.Exit(1)
		}
		started <- h
	}()
	h := <-started
	dout := runtimetest.NewRecorder()
	if _, err := l.Start(context.Background(), runtime.Request{Dir: os.TempDir(), Output: dout}.For(helper("daemon", "daemon"))); err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	dout.WaitFor("daemon ", 10*time.Second)
	out.WaitFor("ready", 10*time.Second)
	// The daemon says ready too, on the plugin's output: before the host
	// dies, or it would die of SIGPIPE writing it, not of the host's end.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		n := 0
		for _, line := range dout.Tail() {
			if line == "ready" {
				n++
			}
		}
		if n >= 2 {
			break
		}
	}
	fmt.Println("plugin", h.PID())
	for _, line := range dout.Tail() {
		if strings.HasPrefix(line, "daemon ") {
			fmt.Println(line)
		}
	}
	for range 100 {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			goruntime.LockOSThread() // never unlocked: the thread ends with the goroutine
		}()
		wg.Wait()
	}
	fmt.Println("busy")
	select {}
}

// TestKillHostLeavesNoChild: kill -9 of the hosting process, after it has
// been busy long enough for threads to come and go, leaves nothing of its
// plugins running 2 seconds later: each runs in a PID namespace of its
// own, whose init gets its parent-death signal from the spawner's thread,
// which lives exactly as long as the host (golang/go#27505); the kernel
// then kills the whole namespace, the daemon that left the plugin's group
// and session included.
func TestKillHostLeavesNoChild(t *testing.T) {
	l := New(Options{})
	iso := l.Isolation()
	l.Close()
	testsupport.NeedNamespace(t, iso.Err)
	plugin, daemon := startHost(t, "1")
	killed := time.Now()
	testsupport.WaitGone(t, 2500*time.Millisecond, plugin, daemon)
	t.Logf("the plugin and its daemon were gone %s after the kill", time.Since(killed).Round(time.Millisecond))
}

// TestKillHostWithoutNamespace: without PID namespaces, the plugin dies
// with its host (its parent-death signal), but the daemon it
// double-forked does not: the next host stops it (see host's
// leftovers).
func TestKillHostWithoutNamespace(t *testing.T) {
	plugin, daemon := startHost(t, "no-namespace")
	testsupport.WaitGone(t, 2*time.Second, plugin)
	assert.False(t, gone(daemon), "the daemon left the plugin's family: no parent-death signal reaches it")
	syscallKill(daemon)
	testsupport.WaitGone(t, 2*time.Second, daemon)
}

// startHost starts this test binary as a host (hostMain), waits until it
// has been busy, checks its plugin outlived that, kills the host with
// SIGKILL, and returns the pids of its plugin and of the plugin's daemon.
func startHost(t *testing.T, mode string) (plugin, daemon int) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), hostEnv+"="+mode)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "plugin" {
			plugin, _ = strconv.Atoi(f[1])
		}
		if len(f) == 2 && f[0] == "daemon" {
			daemon, _ = strconv.Atoi(f[1])
		}
		if sc.Text() == "busy" {
			break
		}
	}
	require.NotZero(t, plugin, "the host reported its plugin")
	require.NotZero(t, daemon, "the host reported its plugin's daemon")
	t.Cleanup(func() {
		for _, pid := range []int{plugin, daemon} {
			if !gone(pid) {
				syscallKill(pid)
			}
		}
	})
	require.False(t, gone(plugin), "the plugin outlived the host's thread churn")
	require.False(t, gone(daemon), "the daemon runs")
	require.NoError(t, cmd.Process.Kill())
	cmd.Wait()
	return plugin, daemon
}

// TestDaemonDiesWithItsPlugin: a plugin that double-forks a daemon into a
// new session. In the plugin's PID namespace the daemon is adopted by its
// init; without one, with this process a subreaper, it is adopted here,
// recognised by the plugin's instance id in its environment. Either way
// it is stopped with the plugin, and reaped, not left a zombie.
func TestDaemonDiesWithItsPlugin(t *testing.T) {
	reaper, err := proc.StartReaper()
	require.NoError(t, err)
	defer reaper.Stop()
	for _, noNamespace := range []bool{false, true} {
		t.Run(map[bool]string{false: "namespace", true: "no namespace"}[noNamespace], func(t *testing.T) {
			l := New(Options{Timing: short, NoNamespace: noNamespace})
			defer l.Close()
			if !noNamespace {
				testsupport.NeedNamespace(t, l.Isolation().Err)
			}
			out := runtimetest.NewRecorder()
			h := startHelper(t, l, helper("daemon", "daemon"), out)
			require.True(t, out.WaitFor("daemon ", 10*time.Second))
			waitReady(t, out, 2) // the daemon, once it ignores SIGTERM, and the plugin
			pids := pidsAfter(t, out, "daemon ")
			require.Len(t, pids, 1)
			sid, err := getsid(pids[0])
			require.NoError(t, err)
			assert.NotEqual(t, h.PID(), sid, "the daemon left the plugin's session")
			adopter := os.Getpid()
			if !noNamespace {
				adopter = parentOf(t, h.PID()) // the init
			}
			assert.Equal(t, adopter, parentOf(t, pids[0]))

			outcome, err := h.Stop(context.Background())
			assert.Equal(t, runtime.Killed, outcome, "the daemon ignores SIGTERM")
			assert.Error(t, err)
			testsupport.WaitGone(t, time.Second, pids...)
			// Reaped: no zombie left.
			deadline := time.Now().Add(2 * time.Second)
			for {
				if _, err := os.Stat(fmt.Sprintf("/proc/%d", pids[0])); os.IsNotExist(err) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the daemon %d is a zombie nobody reaped", pids[0])
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// parentOf reads the parent's pid of pid.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	s := string(b)
	ppid, err := strconv.Atoi(strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[1])
	require.NoError(t, err)
	return ppid
}

// TestParentDeathSignalPitfall shows the pitfall the Spawner avoids: a
// child forked from a thread that then ends gets its parent-death signal
// at once, though its parent process lives on.
func TestParentDeathSignalPitfall(t *testing.T) {
	// Hold this goroutine's thread, so the one below runs on another.
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	// A goroutine that lands on the main thread keeps it locked until
	// the test ends, so that the next try runs on another thread.
	release := make(chan struct{})
	defer close(release)
	for range 20 {
		type result struct {
			cmd *exec.Cmd
			err error
		}
		started := make(chan result)
		go func() {
			goruntime.LockOSThread()
			if unix.Gettid() == os.Getpid() {
				// The main thread is never ended, only parked.
				started <- result{}
				<-release
				goruntime.UnlockOSThread()
				return
			}
			// Never unlocked: this thread ends with the goroutine.
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), helperEnv+"=stubborn", "GORACE=atexit_sleep_ms=0")
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			err := cmd.Start()
			started <- result{cmd, err}
		}()
		r := <-started
		require.NoError(t, r.err)
		if r.cmd == nil {
			continue
		}
		cmd := r.cmd
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		testsupport.WaitGone(t, 2*time.Second, cmd.Process.Pid)
		return
	}
	t.Fatal("no goroutine ran off the main thread")
}
