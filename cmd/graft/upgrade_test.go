package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/graftland/graft/runtime/runtimetest"
)

// buildgraft VERSION OUT builds graft with its release version VERSION at
// OUT: another release, for graft upgrade.
func cmdBuildGraft(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: buildgraft VERSION OUT")
	}
	ts.Check(buildGraft(args[0], ts.MkAbs(args[1])))
}

// buildGraft builds graft as a release of version is built (-ldflags -X,
// README "Install") at out. It is built as this test binary was (with
// -race or without), so the build cache serves its packages and only
// the link is new.
func buildGraft(version, out string) error {
	repo, err := filepath.Abs("../..")
	if err != nil {
		return err
	}
	build := []string{"build", "-o", out, "-ldflags", "-X github.com/graftland/graft/internal/skew.release=" + version}
	if raceBuild {
		build = append(build, "-race")
	}
	cmd := exec.Command("go", append(build, "./cmd/graft")...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GOOS=", "GOARCH=")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build graft %s: %w\n%s", version, err, b)
	}
	return nil
}

// seqlog STATEDIR PLUGIN [AFTER] checks the log of PLUGIN, a plug count:
// its lines say n 1, n 2, ... with none missing, repeated or out of
// order, and no signal among them, up to a last beyond AFTER (when
// given); it sets SEQ to that last.
func cmdSeqLog(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: seqlog statedir plugin [after]")
	}
	after := 0
	if len(args) == 3 {
		var err error
		after, err = strconv.Atoi(args[2])
		ts.Check(err)
	}
	b, err := os.ReadFile(filepath.Join(ts.MkAbs(args[0]), "logs", args[1]+".log"))
	ts.Check(err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	want := 1
	for i, line := range lines {
		rest, ok := strings.CutPrefix(line, "n ")
		n, err := strconv.Atoi(rest)
		if !ok || err != nil {
			ts.Fatalf("line %d of the log: %q, not a number (a signal, or a line cut)", i+1, line)
		}
		if n != want {
			ts.Fatalf("line %d of the log: n %d, want n %d (a line lost or repeated)", i+1, n, want)
		}
		want++
	}
	if want-1 <= after {
		ts.Fatalf("the log ends at n %d: no line after n %d", want-1, after)
	}
	ts.Setenv("SEQ", strconv.Itoa(want-1))
	fmt.Fprintf(ts.Stdout(), "%d lines in sequence\n", len(lines))
}

// waitgone PID [SECONDS] waits until process PID is gone (a zombie is
// gone enough), at most SECONDS (default 10).
func cmdWaitGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitgone pid [seconds]")
	}
	pid, err := strconv.Atoi(args[0])
	ts.Check(err)
	wait := 10 * time.Second
	if len(args) == 2 {
		s, err := strconv.Atoi(args[1])
		ts.Check(err)
		wait = time.Duration(s) * time.Second
	}
	for deadline := time.Now().Add(wait); !runtimetest.Gone(pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			ts.Fatalf("process %d still runs %s later", pid, wait)
		}
	}
}
