//go:build linux

package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/graftland/graft/hostapi"
)

// The script commands of the health and timing scripts.

// pluginStatus is PLUGIN's status in the host of $WORK/.graft, or nil.
func pluginStatus(ts *testscript.TestScript, name string) *hostapi.PluginStatus {
	c, err := hostapi.NewClient(ts.MkAbs(".graft"))
	ts.Check(err)
	defer c.Close()
	st, err := c.Status(context.Background())
	ts.Check(err)
	for i := range st.Plugins {
		if st.Plugins[i].Name == name {
			return &st.Plugins[i]
		}
	}
	return nil
}

// waithealth PLUGIN HEALTH [SECONDS] waits until PLUGIN's health is
// HEALTH (starting, healthy, unhealthy), at most SECONDS (default 30),
// polling every 20 ms.
func cmdWaitHealth(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: waithealth plugin health [seconds]")
	}
	wait := 30 * time.Second
	if len(args) == 3 {
		s, err := strconv.ParseFloat(args[2], 64)
		ts.Check(err)
		wait = time.Duration(s * float64(time.Second))
	}
	deadline := time.Now().Add(wait)
	last := "not listed"
	for {
		if r := pluginStatus(ts, args[0]); r != nil {
			last = r.Health + " (" + string(r.Status) + ")"
			if r.Health == args[1] {
				return
			}
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s is %s, not %s, after %s", args[0], last, args[1], wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mark VAR sets VAR to the time now, for elapsed.
func cmdMark(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mark var")
	}
	ts.Setenv(args[0], strconv.FormatInt(time.Now().UnixNano(), 10))
}

// elapsed VAR MIN MAX checks that the time since mark VAR is between MIN
// and MAX seconds, and logs it.
func cmdElapsed(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: elapsed var min max")
	}
	at, err := strconv.ParseInt(ts.Getenv(args[0]), 10, 64)
	ts.Check(err)
	lo, err := strconv.ParseFloat(args[1], 64)
	ts.Check(err)
	hi, err := strconv.ParseFloat(args[2], 64)
	ts.Check(err)
	d := time.Since(time.Unix(0, at)).Seconds()
	ts.Logf("%.3fs since %s", d, args[0])
	if d < lo || d > hi {
		ts.Fatalf("%.3fs since %s, want between %ss and %ss", d, args[0], args[1], args[2])
	}
}

// sigplug PLUGIN SIGNAL sends SIGNAL (STOP, CONT, TERM, KILL) to
// PLUGIN's process, by the pid in the host's status.
func cmdSigPlug(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: sigplug plugin signal")
	}
	r := pluginStatus(ts, args[0])
	if r == nil || r.PID == 0 {
		ts.Fatalf("%s has no process", args[0])
	}
	sig, ok := map[string]syscall.Signal{"STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT, "TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL}[args[1]]
	if !ok {
		ts.Fatalf("unknown signal %s", args[1])
	}
	ts.Check(syscall.Kill(r.PID, sig))
}

// readylag PLUGIN MAXMS checks that PLUGIN's host took it for ready (its
// running since) at most MAXMS milliseconds after it printed its line
// "... at=UNIXNANO" (plug late), and not before.
func cmdReadyLag(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: readylag plugin maxms")
	}
	most, err := strconv.Atoi(args[1])
	ts.Check(err)
	c, err := hostapi.NewClient(ts.MkAbs(".graft"))
	ts.Check(err)
	defer c.Close()
	var b strings.Builder
	ts.Check(c.Logs(context.Background(), args[0], 100, false, &b))
	m := regexp.MustCompile(`at=(\d+)`).FindStringSubmatch(b.String())
	if m == nil {
		ts.Fatalf("no line with at= in the log of %s:\n%s", args[0], b.String())
	}
	printed, err := strconv.ParseInt(m[1], 10, 64)
	ts.Check(err)
	r := pluginStatus(ts, args[0])
	if r == nil {
		ts.Fatalf("no plugin %s", args[0])
	}
	lag := r.Since.Sub(time.Unix(0, printed))
	ts.Logf("ready %s after the line", lag)
	if lag < 0 || lag > time.Duration(most)*time.Millisecond {
		ts.Fatalf("ready %s after the line, want within 0 and %dms", lag, most)
	}
}
