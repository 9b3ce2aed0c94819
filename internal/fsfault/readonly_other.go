//go:build !linux

package fsfault

import (
	"os"
	"testing"
)

// ReadOnly makes dir refuse new entries, by its mode, until restore or the
// test's end.
func ReadOnly(t testing.TB, dir string) (restore func()) {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	done := false
	restore = func() {
		if !done {
			done = true
			os.Chmod(dir, fi.Mode().Perm())
		}
	}
	t.Cleanup(restore)
	return restore
}
