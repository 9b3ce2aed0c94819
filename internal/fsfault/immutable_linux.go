package fsfault

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/graftland/graft/internal/testprog"
)

// Immutable makes the file at path refuse every write until restore, or
// the test's end, even through a descriptor opened before, which a mode
// does not stop: the immutable attribute, which only root may set (with
// CAP_LINUX_IMMUTABLE, on a file system that has it). The test is skipped
// when not root, or fails under GRAFT_TEST_REQUIRE_ALL=1.
func Immutable(t testing.TB, path string) (restore func()) {
	t.Helper()
	testprog.NeedRoot(t, "only the immutable attribute stops writes through an open descriptor")
	undo, err := immutable(path)
	if err != nil {
		t.Fatal(err)
	}
	return cleanup(t, undo)
}

// MakeImmutable is Immutable for a program that is not a test, for dir
// and every file in it, as a file system remounted read-only refuses
// every write: it returns the function that undoes it. It needs root.
func MakeImmutable(dir string) (undo func() error, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var undos []func() error
	undoAll := func() error {
		var first error
		for i := len(undos) - 1; i >= 0; i-- {
			if err := undos[i](); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		u, err := immutable(filepath.Join(dir, e.Name()))
		if err != nil {
			undoAll()
			return nil, err
		}
		undos = append(undos, u)
	}
	u, err := immutable(dir)
	if err != nil {
		undoAll()
		return nil, err
	}
	undos = append(undos, u)
	return undoAll, nil
}
