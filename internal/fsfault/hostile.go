package fsfault

import (
	"os"
	"os/exec"
	"testing"

	"github.com/graftland/graft/internal/testprog"
)

// Hostile returns a fresh directory that another user, nobody, may write,
// reachable by that user, and a function that runs a shell script as nobody
// in it (with setpriv, of util-linux). Only root can act as another user:
// the test is skipped when not root, or fails under GRAFT_TEST_REQUIRE_ALL=1.
// The directory is removed at the test's end.
func Hostile(t testing.TB) (dir string, asNobody func(script string)) {
	t.Helper()
	testprog.NeedRoot(t, "this test acts as another user")
	testprog.Need(t, "setpriv", "util-linux")
	// Not under t.TempDir, which nobody cannot enter.
	dir, err := os.MkdirTemp("", "graft-hostile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir, func(script string) {
		t.Helper()
		cmd := exec.Command("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "sh", "-ec", script)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("as nobody: %s: %v\n%s", script, err, out)
		}
	}
}
