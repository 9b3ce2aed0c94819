package fsfault

import (
	"testing"

	"golang.org/x/sys/unix"

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
	flags, err := fileAttributes(path, 0, false)
	if err != nil {
		t.Fatalf("read the attributes of %s: %v", path, err)
	}
	if _, err := fileAttributes(path, flags|fsImmutableFL, true); err != nil {
		t.Fatalf("make %s immutable: %v", path, err)
	}
	return cleanup(t, func() error {
		_, err := fileAttributes(path, flags&^fsImmutableFL, true)
		return err
	})
}

// fileAttributes reads a file's inode flags, or sets them to flags.
func fileAttributes(path string, flags uint32, set bool) (uint32, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	if set {
		return flags, unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags))
	}
	return unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
}
