package fsfault

import (
	"os"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// fsImmutableFL is FS_IMMUTABLE_FL of linux/fs.h, which x/sys/unix lacks.
const fsImmutableFL = 0x00000010

// ReadOnly makes dir refuse new entries until restore, or the test's end,
// even to root, which ignores modes: as root with the immutable attribute
// (which needs CAP_LINUX_IMMUTABLE and a file system that has it),
// otherwise with mode 0555. It fails the test when it cannot.
func ReadOnly(t testing.TB, dir string) (restore func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		return cleanup(t, func() error { return os.Chmod(dir, fi.Mode().Perm()) })
	}
	return immutable(t, dir)
}

// immutable sets the immutable attribute of the file or directory at
// path (root needs CAP_LINUX_IMMUTABLE, and the file system the
// attribute) until restore, or the test's end.
func immutable(t testing.TB, path string) (restore func()) {
	t.Helper()
	flags, err := attributes(path, 0, false)
	if err != nil {
		t.Fatalf("read the attributes of %s: %v", path, err)
	}
	if _, err := attributes(path, flags|fsImmutableFL, true); err != nil {
		t.Fatalf("make %s immutable (root needs CAP_LINUX_IMMUTABLE, and the file system the attribute): %v", path, err)
	}
	return cleanup(t, func() error {
		_, err := attributes(path, flags&^fsImmutableFL, true)
		return err
	})
}

// attributes reads the inode flags of the file or directory at path, or
// sets them to flags.
func attributes(path string, flags uint32, set bool) (uint32, error) {
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

// cleanup runs undo once: at restore, or at the test's end.
func cleanup(t testing.TB, undo func() error) func() {
	var once sync.Once
	restore := func() {
		once.Do(func() {
			if err := undo(); err != nil {
				t.Errorf("make it writable again: %v", err)
			}
		})
	}
	t.Cleanup(restore)
	return restore
}
