// Package testprog lets a test use a real program that the machine may
// lack: the test is skipped with a message that names the program and the
// command that installs it, or fails instead when GRAFT_TEST_REQUIRE_ALL=1
// says that every test must run (as .ci/run does).
package testprog

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// RequireAllEnv names the variable that, set to 1, turns a missing
// program from a skip into a failure.
const RequireAllEnv = "GRAFT_TEST_REQUIRE_ALL"

// Missing says why program cannot be run here, naming the Debian package
// that provides it; "" when it is on PATH.
func Missing(program, pkg string) string {
	if _, err := exec.LookPath(program); err == nil {
		return ""
	}
	return fmt.Sprintf("%s is not installed: apt-get install %s", program, pkg)
}

// RequireAll reports whether every test must run: a missing program is a
// failure, not a skip.
func RequireAll() bool { return os.Getenv(RequireAllEnv) == "1" }

// Need skips t when program is not on PATH, or fails it when RequireAll.
func Need(t testing.TB, program, pkg string) {
	t.Helper()
	why := Missing(program, pkg)
	switch {
	case why == "":
	case RequireAll():
		t.Fatalf("%s (%s=1: no test may be skipped)", why, RequireAllEnv)
	default:
		t.Skip(why)
	}
}
