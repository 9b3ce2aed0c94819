package fsfault

import (
	"fmt"
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
	undo, err := MakeReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	return cleanup(t, undo)
}

// MakeReadOnly is ReadOnly for a program that is not a test: it returns
// the function that makes dir writable again.
func MakeReadOnly(dir string) (undo func() error, err error) {
	if os.Geteuid() != 0 {
		fi, err := os.Stat(dir)
		if err != nil {
			return nil, err
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			return nil, err
		}
		return func() error { return os.Chmod(dir, fi.Mode().Perm()) }, nil
	}
	return immutable(dir)
}

// immutable sets the immutable attribute of the file or directory at
// path (root needs CAP_LINUX_IMMUTABLE, and the file system the
// attribute), and returns the function that clears it.
func immutable(path string) (undo func() error, err error) {
	flags, err := attributes(path, 0, false)
	if err != nil {
		return nil, fmt.Errorf("read the attributes of %s: %w", path, err)
	}
	if _, err := attributes(path, flags|fsImmutableFL, true); err != nil {
		return nil, fmt.Errorf("make %s immutable (root needs CAP_LINUX_IMMUTABLE, and the file system the attribute): %w", path, err)
	}
	return func() error {
		_, err := attributes(path, flags&^fsImmutableFL, true)
		return err
	}, nil
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
