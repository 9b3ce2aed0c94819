//go:build linux

package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/testprog"
	"github.com/graftland/graft/spec"
)

// startuprace N keeps spec A (graft apply), kills the host with SIGKILL,
// writes spec B and runs graft apply, which starts a host that applies A
// again as it starts; then checks that B's plugin, and only it, runs and
// that B is the kept spec. N rounds.
func cmdStartupRace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: startuprace N")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	file := ts.MkAbs("plugins.yaml")
	write := func(yaml string) *spec.Spec {
		ts.Check(os.WriteFile(file, []byte(yaml), 0o644))
		s, err := spec.Parse(file, []byte(yaml))
		ts.Check(err)
		return s
	}
	for i := range n {
		write(fmt.Sprintf("name: race\nplugins:\n  a%d: {command: [plug, serve, a]}\n", i))
		ts.Check(ts.Exec("graft", "apply"))
		cmdKillHost(ts, false, nil)
		b := write(fmt.Sprintf("name: race\nplugins:\n  b%d: {command: [plug, serve, b]}\n", i))
		ts.Check(ts.Exec("graft", "apply"))

		c, err := hostapi.NewClient(ts.MkAbs(".graft"))
		ts.Check(err)
		st, err := c.Status(context.Background())
		c.Close()
		ts.Check(err)
		running := map[string]string{}
		for _, r := range st.Plugins {
			running[r.Name] = string(r.Status)
		}
		want := fmt.Sprintf("b%d", i)
		if len(running) != 1 || running[want] != "running" {
			ts.Fatalf("round %d: running %v, want only %s", i+1, slices.Sorted(maps.Keys(running)), want)
		}
		if st.Host.Spec != b.Digest() {
			ts.Fatalf("round %d: the host keeps spec %s, want B's, %s", i+1, st.Host.Spec, b.Digest())
		}
	}
}

// sigpid FILE SIGNAL sends SIGNAL (STOP, CONT, TERM, HUP, ...) to the process
// whose pid is in FILE, such as a runner's runner.lock: to freeze a
// daemon and wake it.
func cmdSigPID(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: sigpid file signal")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	ts.Check(err)
	sig, ok := map[string]syscall.Signal{"STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT, "TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "HUP": syscall.SIGHUP}[args[1]]
	if !ok {
		ts.Fatalf("unknown signal %s", args[1])
	}
	ts.Check(syscall.Kill(pid, sig))
}

// waitstatus PLUGIN STATUS [SECONDS] waits until PLUGIN has STATUS in the
// status of the host of $WORK/.graft, at most SECONDS (default 30).
func cmdWaitStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: waitstatus plugin status [seconds]")
	}
	wait := 30 * time.Second
	if len(args) == 3 {
		s, err := strconv.Atoi(args[2])
		ts.Check(err)
		wait = time.Duration(s) * time.Second
	}
	deadline := time.Now().Add(wait)
	last := "not listed"
	for {
		c, err := hostapi.NewClient(ts.MkAbs(".graft"))
		ts.Check(err)
		st, err := c.Status(context.Background())
		c.Close()
		ts.Check(err)
		for _, r := range st.Plugins {
			if r.Name == args[0] {
				last = string(r.Status)
			}
		}
		if last == args[1] {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s is %s, not %s, after %s", args[0], last, args[1], wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// installedCond is the condition [installed:PROGRAM:PACKAGE]: whether
// PROGRAM is on PATH, or, for an absolute PROGRAM, whether a file matches
// it as a glob (/usr/lib/postgresql/*/bin/postgres). A script skips without it, saying so:
//
//	[!installed:redis-server:redis-server] skip 'redis-server is not installed: apt-get install redis-server'
//
// Under GRAFT_TEST_REQUIRE_ALL=1 (CI) a missing program fails the script
// instead.
//
// The condition [root] is whether the tests run as root, which a recipe
// whose daemon runs as its own user needs; under GRAFT_TEST_REQUIRE_ALL=1
// a script that needs it fails without it, as testprog.NeedRoot does.
func installedCond(cond string) (bool, error) {
	if cond == "root" {
		if os.Geteuid() != 0 && testprog.RequireAll() {
			return false, fmt.Errorf("the script acts as another user, which needs root (%s=1: no test may be skipped)", testprog.RequireAllEnv)
		}
		return os.Geteuid() == 0, nil
	}
	args := strings.Split(cond, ":")
	if len(args) != 3 || args[0] != "installed" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	why := testprog.Missing(args[1], args[2])
	if strings.HasPrefix(args[1], "/") { // a program off PATH, by a glob of its path
		why = ""
		if m, _ := filepath.Glob(args[1]); len(m) == 0 {
			why = fmt.Sprintf("%s is not installed: apt-get install %s", args[1], args[2])
		}
	}
	if why != "" && testprog.RequireAll() {
		return false, fmt.Errorf("%s (%s=1: no test may be skipped)", why, testprog.RequireAllEnv)
	}
	return why == "", nil
}
