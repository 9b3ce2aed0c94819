//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// The plugins of these tests are this test binary run again, as
// go-plugin's helper processes are: GRAFT_TEST_HELPER names what the
// plugin does (testsupport.PlayRole).
const helperEnv = "GRAFT_TEST_HELPER"

// helperMain acts as the plugin of one of this package's roles, those
// beyond runtimetest.Play's, and exits, or returns false for a role it
// does not know.
func helperMain(role string, args []string) bool {
	say := func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
	switch role {
	case "slow": // takes args[0] to shut down on the first SIGTERM; exits at the second
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGTERM)
		say("ready")
		<-sigs
		say("shutting down slowly")
		d, _ := time.ParseDuration(args[0])
		select {
		case <-time.After(d):
			say("done")
		case <-sigs:
			say("terminated")
		}
		os.Exit(0)
	case "reloader": // says which signal came; reloads on SIGHUP and SIGUSR1, exits on SIGTERM and SIGINT
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT)
		say("ready")
		for sig := range sigs {
			say("got %v", sig)
			if sig == syscall.SIGTERM || sig == syscall.SIGINT {
				os.Exit(0)
			}
		}
	case "start-as": // as a daemon that is not root would, starts /bin/true as user args[0], and prints the error
		l := New(Options{})
		p := &spec.Plugin{Name: "db", Run: spec.Local, StopSignal: "SIGTERM", Command: []string{"/bin/true"}, User: args[0]}
		_, err := l.Start(context.Background(), runtime.Request{Project: "test", Dir: "/", Output: runtimetest.NewRecorder()}.For(p))
		l.Close()
		var ce *CredError
		say("%v hint=%v", err, errors.As(err, &ce) && ce.Hint() != "")
		os.Exit(0)
	case "start-limited": // as a daemon that is not root would, starts /bin/true with nofile args[0], and prints the error
		l := New(Options{})
		var v launch.LimitValue
		v.UnmarshalText([]byte(args[0]))
		p := &spec.Plugin{Name: "db", Run: spec.Local, StopSignal: "SIGTERM", Command: []string{"/bin/true"},
			Limits: map[string]spec.Limit{"nofile": {Soft: 1, Hard: v}}}
		_, err := l.Start(context.Background(), runtime.Request{Project: "test", Dir: "/", Output: runtimetest.NewRecorder()}.For(p))
		l.Close()
		say("%v", err)
		os.Exit(0)
	}
	return familyMain(role, args)
}

// familyMain acts as the helper roles that start processes of their own
// (children in the plugin's group, a grandchild that escapes into a
// session of its own), and exits, or returns false for a role it does
// not know.
func familyMain(role string, args []string) bool {
	say := func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
	switch role {
	case "forker": // starts args[0] stubborn children in its group, prints their pids, then is cooperative
		n, _ := strconv.Atoi(args[0])
		var pids []string
		for range n {
			pids = append(pids, strconv.Itoa(spawnHelper("stubborn", false)))
		}
		say("children %s", strings.Join(pids, " "))
		runtimetest.Play("cooperative", nil)
	case "daemon": // double-forks a stubborn grandchild into a new session, prints its pid, then is cooperative
		say("daemon %d", spawnHelper("setsid-spawner", false))
		runtimetest.Play("cooperative", nil)
	case "setsid-spawner": // the middle of a double fork: new session, spawn, print, exit
		fmt.Println(spawnHelper("stubborn", true))
		os.Exit(0)
	}
	return false
}

// probeMain is a ready command: it exits 0 if addr accepts a connection.
func probeMain(addr string) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	conn.Close()
	os.Exit(0)
}

// spawnHelper starts this binary as role, optionally in a new session,
// and returns its pid without waiting for it. For a daemon's middle
// process it returns the pid its own child prints.
func spawnHelper(role string, setsid bool) int {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+role)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	if role == "setsid-spawner" {
		cmd.Stderr = os.Stderr // not Output's own pipe, which the daemon would hold open
		out, err := cmd.Output()
		if err != nil {
			panic(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
		return pid // its child's pid here, told by the child itself
	}
	// A daemon's stdout is its middle process's, which its parent reads to
	// the end: it writes to stderr, the plugin's output, instead.
	cmd.Stdout = os.Stdout
	if setsid {
		cmd.Stdout = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	return runtimetest.HostPID(cmd.Process.Pid) // as the tests see it
}
