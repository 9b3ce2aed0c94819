// Package testprog lets a test use what the machine may lack (a real
// program, root, a kernel feature): the test is skipped with a message
// that says what is missing and how to get it, or fails instead when
// GRAFT_TEST_REQUIRE_ALL=1 says that every test must run (as .ci/run does).
// It is the one place graft's tests skip.
package testprog

import (
	"fmt"
	"os"
	"os/exec"
)

// RequireAllEnv names the variable that, set to 1, turns a missing
// program from a skip into a failure.
const RequireAllEnv = "GRAFT_TEST_REQUIRE_ALL"

// TB is what Unavailable needs of a test: *testing.T and *testing.B have
// it.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatalf(format string, args ...any)
}

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

// Unavailable ends t for want of what why says this machine lacks: it is
// skipped, or fails when RequireAll.
func Unavailable(t TB, why string) {
	t.Helper()
	if RequireAll() {
		t.Fatalf("%s (%s=1: no test may be skipped)", why, RequireAllEnv)
		return
	}
	t.Skip(why)
}

// Need ends t (Unavailable) when program is not on PATH.
func Need(t TB, program, pkg string) {
	t.Helper()
	if why := Missing(program, pkg); why != "" {
		Unavailable(t, why)
	}
}

// NeedRoot ends t (Unavailable) unless this process is root: what says
// what the test does that needs it, such as acting as another user.
func NeedRoot(t TB, what string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, what+", which needs root: run it as root")
	}
}
