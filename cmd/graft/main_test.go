//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"go.uber.org/goleak"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/testsupport"
)

var update = flag.Bool("update", false, "rewrite the cmp files of testdata/script")

// TestMain registers this binary as the graft and plug commands of the
// scripts, which run it as real programs, and checks for leaked
// goroutines.
func TestMain(m *testing.M) {
	testscript.Main(leakCheck{m}, map[string]func(){"graft": main, "plug": plugMain})
}

type leakCheck struct{ m *testing.M }

func (l leakCheck) Run() int {
	code := l.m.Run()
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}

// TestScripts runs the end-to-end scripts of testdata/script.
func TestScripts(t *testing.T) {
	testscript.Run(t, scriptParams("testdata/script"))
}

// TestRecipes runs the end-to-end scripts of testdata/recipes, one per
// recipe of examples/recipes, against the real daemons: each begins with
// "recipe NAME", which copies the recipe into the script's directory.
func TestRecipes(t *testing.T) {
	testscript.Run(t, scriptParams("testdata/recipes"))
}

// scriptParams are the parameters of the scripts in dir: their
// environment, their conditions and their commands.
func scriptParams(dir string) testscript.Params {
	return testscript.Params{
		Dir:           dir,
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("NO_COLOR", "")
			// Under -race a program sleeps a second at exit unless told not
			// to, which would look like a slow stop.
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			// Every process a script starts carries this, so the script can
			// count them and its end can clean up after a failure.
			env.Setenv("GRAFT_TEST_RUN", env.WorkDir)
			// The quickstart's plugins are built with go run.
			repo, err := filepath.Abs("../..")
			if err != nil {
				return err
			}
			env.Setenv("REPO", repo)
			for k, v := range goEnv() {
				env.Setenv(k, v)
			}
			env.Defer(func() { cleanup(env.WorkDir) })
			return nil
		},
		Condition: installedCond,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":       cmdExits,
			"mode":        cmdMode,
			"plugins":     cmdPlugins,
			"procs":       cmdProcs,
			"killhost":    cmdKillHost,
			"statusvar":   cmdStatusVar,
			"eq":          cmdEq,
			"waitapply":   cmdWaitApply,
			"waithost":    cmdWaitHost,
			"waitidle":    cmdWaitIdle,
			"waitlog":     cmdWaitLog,
			"freeport":    cmdFreePort,
			"waitconn":    cmdWaitConn,
			"envsubst":    cmdEnvsubst,
			"httpget":     cmdHTTPGet,
			"startuprace": cmdStartupRace,
			"sigpid":      cmdSigPID,
			"waitstatus":  cmdWaitStatus,
			"applyas":     cmdApplyAs,
			"bruteforce":  cmdBruteforce,
			"oldstatus":   cmdOldStatus,
			"jsonset":     cmdJSONSet,
			"gencerts":    cmdGenCerts,
			"metrics":     cmdMetrics,
			"waithealth":  cmdWaitHealth,
			"mark":        cmdMark,
			"elapsed":     cmdElapsed,
			"sigplug":     cmdSigPlug,
			"readylag":    cmdReadyLag,
			"recipe":      cmdRecipe,
			"buildgraft":  cmdBuildGraft,
			"seqlog":      cmdSeqLog,
			"waitgone":    cmdWaitGone,
			"hammer":      cmdHammer,
		},
	}
}

// recipe NAME copies examples/recipes/NAME, its plugins.yaml and its
// config files, into the script's directory, so that a recipe's test runs
// the recipe as it is published.
func cmdRecipe(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: recipe NAME")
	}
	src := filepath.Join(ts.Getenv("REPO"), "examples", "recipes", args[0])
	ts.Check(os.CopyFS(ts.MkAbs("."), os.DirFS(src)))
}

// exits N CMD ARGS... runs a command and checks its exit status is
// exactly N, as scripts need for --detailed-exitcode.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits N command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	code := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%v", err)
		}
		code = ee.ExitCode()
	}
	if code != want {
		ts.Fatalf("exit status %d, want %d", code, want)
	}
}

// mode FILE PERM checks a file's permission bits, such as 0600.
func cmdMode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: mode file perm")
	}
	want, err := strconv.ParseUint(args[1], 8, 32)
	ts.Check(err)
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	if got := fi.Mode().Perm(); got != os.FileMode(want) {
		ts.Fatalf("%s has mode %#o, want %#o", args[0], got, want)
	}
}

// plugins N [SECONDS] waits until exactly N plug processes of this script
// live (zombies count as gone), at most SECONDS (default 5). procs does
// the same for every process of this script: hosts and plugins whatever
// their program.
func cmdPlugins(ts *testscript.TestScript, neg bool, args []string) { waitCount(ts, args, plugs) }

func cmdProcs(ts *testscript.TestScript, neg bool, args []string) { waitCount(ts, args, marked) }

func waitCount(ts *testscript.TestScript, args []string, list func(run string) []int) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: plugins|procs N [seconds]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	wait := 5 * time.Second
	if len(args) == 2 {
		s, err := strconv.ParseFloat(args[1], 64)
		ts.Check(err)
		wait = time.Duration(s * float64(time.Second))
	}
	deadline := time.Now().Add(wait)
	for {
		got := list(ts.Getenv("GRAFT_TEST_RUN"))
		if len(got) == want {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%d processes (%v), want %d", len(got), got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// plugs lists the live plug processes that carry run's marker.
func plugs(run string) []int {
	var pids []int
	for _, pid := range marked(run) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		if filepath.Base(argv0) == "plug" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// marked lists the live processes whose environment carries run's marker.
func marked(run string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(stat[strings.LastIndexByte(string(stat), ')'):]), ") Z ") {
			continue
		}
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == "GRAFT_TEST_RUN="+run {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// cleanup kills whatever a script left running: its host, then anything
// carrying its marker.
func cleanup(work string) {
	if pid := hostPID(filepath.Join(work, ".graft")); pid > 0 {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range marked(work) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// hostPID is the pid in a state dir's lock file, if that process lives.
func hostPID(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "host.lock"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return 0
	}
	return pid
}

// killhost [DIR] sends SIGKILL to the host of state dir DIR (default
// $WORK/.graft) and waits until it is gone.
func cmdKillHost(ts *testscript.TestScript, neg bool, args []string) {
	dir := ts.MkAbs(".graft")
	if len(args) == 1 {
		dir = ts.MkAbs(args[0])
	}
	pid := hostPID(dir)
	if pid == 0 {
		ts.Fatalf("no host runs for %s", dir)
	}
	ts.Check(killAndWait(pid, 5*time.Second))
}

// killAndWait sends SIGKILL to pid and waits, at most d, until it is gone.
func killAndWait(pid int, d time.Duration) error {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	deadline := time.Now().Add(d)
	for syscall.Kill(pid, 0) == nil {
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(stat), ") Z ") {
			// A zombie its parent will reap, once its other threads are
			// gone too: the leader of a thread group turns zombie before
			// the rest, which still hold its files (its socket).
			if tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid)); len(tasks) <= 1 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d survived SIGKILL", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// statusvar PLUGIN FIELD VAR sets VAR to FIELD (pid, instance, generation
// or status) of PLUGIN in the status of the host of $WORK/.graft.
func cmdStatusVar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: statusvar plugin field var")
	}
	c, err := hostapi.NewClient(ts.MkAbs(".graft"))
	ts.Check(err)
	defer c.Close()
	st, err := c.Status(context.Background())
	ts.Check(err)
	for _, r := range st.Plugins {
		if r.Name != args[0] {
			continue
		}
		v := map[string]string{
			"pid":        strconv.Itoa(r.PID),
			"instance":   r.Instance,
			"generation": strconv.FormatInt(r.Generation, 10),
			"status":     string(r.Status),
		}[args[1]]
		ts.Setenv(args[2], v)
		return
	}
	ts.Fatalf("no plugin %s in the status", args[0])
}

// eq A B checks A equals B (with !, that they differ).
func cmdEq(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: eq a b")
	}
	if (args[0] == args[1]) == neg {
		ts.Fatalf("%q and %q: want them %s", args[0], args[1], map[bool]string{false: "equal", true: "different"}[neg])
	}
}

// waitapply waits until the host of $WORK/.graft is applying; waitidle,
// until it is not.
func cmdWaitApply(ts *testscript.TestScript, neg bool, args []string) { waitApplying(ts, true) }

func cmdWaitIdle(ts *testscript.TestScript, neg bool, args []string) { waitApplying(ts, false) }

func waitApplying(ts *testscript.TestScript, applying bool) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := hostapi.NewClient(ts.MkAbs(".graft"))
		ts.Check(err)
		st, err := c.Status(context.Background())
		c.Close()
		if err == nil && (st.Host.Applying != "") == applying {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("the host is not %s: %v", map[bool]string{true: "applying", false: "idle"}[applying], err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waithost waits until a host answers for $WORK/.graft.
func cmdWaitHost(ts *testscript.TestScript, neg bool, args []string) {
	c, err := hostapi.NewClient(ts.MkAbs(".graft"))
	ts.Check(err)
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background(), time.Second) != nil {
		if time.Now().After(deadline) {
			ts.Fatalf("no host answers for .graft")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// goEnv is what go run needs from this environment: scripts run with
// HOME=/no-home.
var goEnv = sync.OnceValue(func() map[string]string {
	env := map[string]string{}
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS").Output()
	if err != nil {
		return env
	}
	for i, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS"} {
		if lines := strings.Split(string(out), "\n"); i < len(lines) {
			env[k] = lines[i]
		}
	}
	return env
})

// waitlog STATEDIR PLUGIN REGEXP [SECONDS] waits until the plugin's log
// has a line matching REGEXP, at most SECONDS (default 60).
func cmdWaitLog(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 || len(args) > 4 {
		ts.Fatalf("usage: waitlog statedir plugin regexp [seconds]")
	}
	re, err := regexp.Compile(args[2])
	ts.Check(err)
	wait := time.Minute
	if len(args) == 4 {
		s, err := strconv.Atoi(args[3])
		ts.Check(err)
		wait = time.Duration(s) * time.Second
	}
	c, err := hostapi.NewClient(ts.MkAbs(args[0]))
	ts.Check(err)
	defer c.Close()
	deadline := time.Now().Add(wait)
	for {
		var b strings.Builder
		err := c.Logs(context.Background(), args[1], 1000, false, &b)
		if err == nil && re.MatchString(b.String()) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("no line matching %q in the log of %s: %v\n%s", args[2], args[1], err, b.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitconn ADDR waits until ADDR (tcp://HOST:PORT or unix://PATH)
// accepts a connection: a runner started in the background listens.
func cmdWaitConn(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitconn tcp://HOST:PORT|unix://PATH")
	}
	network, addr := "tcp", strings.TrimPrefix(args[0], "tcp://")
	if path, ok := strings.CutPrefix(args[0], "unix://"); ok {
		network, addr = "unix", path
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := dial(network, addr)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("nothing listens on %s: %v", args[0], err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dial connects to addr and hangs up: nil when something listens there.
func dial(network, addr string) error {
	c, err := net.DialTimeout(network, addr, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// freeport VAR sets VAR to a loopback TCP port nothing listens on.
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport var")
	}
	_, port, err := net.SplitHostPort(testsupport.FreeAddr(ts))
	ts.Check(err)
	ts.Setenv(args[0], port)
}

// envsubst FILE... replaces $VAR and ${VAR} in the files with the
// script's environment.
func cmdEnvsubst(ts *testscript.TestScript, neg bool, args []string) {
	for _, f := range args {
		b, err := os.ReadFile(ts.MkAbs(f))
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(f), []byte(os.Expand(string(b), ts.Getenv)), 0o644))
	}
}
