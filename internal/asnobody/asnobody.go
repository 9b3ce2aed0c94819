//go:build linux

// Package asnobody runs this test binary again as the user nobody, for
// tests of what graft does about another user's sockets and directories:
// a real second uid, not a fake. It needs root and setpriv (util-linux);
// without them a test is skipped with a message saying so, or fails when
// GRAFT_TEST_REQUIRE_ALL=1 (internal/testprog).
package asnobody

import (
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/graftland/graft/internal/testprog"
)

// Need skips t unless this process is root and setpriv is installed (or
// fails it, under GRAFT_TEST_REQUIRE_ALL=1), and returns nobody's uid.
func Need(t testing.TB) int {
	t.Helper()
	testprog.NeedRoot(t, "this test acts as another user (nobody)")
	testprog.Need(t, "setpriv", "util-linux")
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("no user nobody: %v", err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		t.Fatal(err)
	}
	return uid
}

// Dir returns a new directory that nobody owns and can reach, removed at
// the test's end.
func Dir(t testing.TB) string {
	t.Helper()
	uid := Need(t)
	dir, err := os.MkdirTemp("", "graft-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, -1); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Program copies this test binary to dir/name, mode 0755, for nobody to
// run: the test binary's own directory is root's alone. Named as a
// command that testscript.Main knows, the copy is that command.
func Program(t testing.TB, dir, name string) string {
	t.Helper()
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(dir, name)
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Command runs path with args as nobody, with no supplementary groups.
func Command(path string, args ...string) *exec.Cmd {
	return exec.Command("setpriv", append([]string{"--reuid=nobody", "--regid=nogroup", "--clear-groups", path}, args...)...)
}
