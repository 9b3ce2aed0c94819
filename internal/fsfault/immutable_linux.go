package fsfault

import (
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
	return immutable(t, path)
}
