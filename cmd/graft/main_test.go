package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the cmp files of testdata/script")

// TestMain registers this binary as the graft command of the scripts,
// which run it as a real program, and checks for leaked goroutines.
func TestMain(m *testing.M) {
	testscript.Main(leakCheck{m}, map[string]func(){"graft": main})
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
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("NO_COLOR", "")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// mode FILE PERM checks a file's permission bits, such as 0600.
			"mode": func(ts *testscript.TestScript, neg bool, args []string) {
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
			},
			// exits N CMD ARGS... runs a command and checks its exit status
			// is exactly N, as scripts need for --detailed-exitcode.
			"exits": func(ts *testscript.TestScript, neg bool, args []string) {
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
			},
		},
	})
}
