package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// buildgraft VERSION OUT builds graft with -ldflags "-X main.version=VERSION"
// at OUT: another release, for graft upgrade. It is built as this test
// binary was (with -race or without), so the build cache serves its
// packages.
func cmdBuildGraft(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: buildgraft VERSION OUT")
	}
	repo, err := filepath.Abs("../..")
	ts.Check(err)
	build := []string{"build", "-o", ts.MkAbs(args[1]), "-ldflags", "-X main.version=" + args[0]}
	if raceBuild {
		build = append(build, "-race")
	}
	cmd := exec.Command("go", append(build, "./cmd/graft")...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GOOS=", "GOARCH=")
	if out, err := cmd.CombinedOutput(); err != nil {
		ts.Fatalf("go build: %v\n%s", err, out)
	}
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
