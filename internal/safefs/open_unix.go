//go:build unix

package safefs

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// OpenFile opens the file at path as os.OpenFile does, safely:
//
//   - a symbolic link at path is refused, not followed (O_NOFOLLOW);
//   - a named pipe is opened without waiting for its other end
//     (O_NONBLOCK), and anything but a regular file is refused, checked on
//     the open file (fstat), and before opening (lstat), so that no device
//     is ever opened;
//   - a file opened for writing must belong to this process's user and
//     have no other name (a hard link), so that it is not another's file
//     put there; O_TRUNC truncates it only once that is checked.
//
// A refused file is an *UnsafeError that names it and the fix.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	write := flag&(os.O_WRONLY|os.O_RDWR) != 0
	if fi, err := os.Lstat(path); err == nil {
		if err := checkFile(path, fi, write); err != nil {
			return nil, err
		}
	}
	fd, err := unix.Open(path, (flag&^os.O_TRUNC)|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) {
			return nil, &UnsafeError{Path: path, Problem: "is a symbolic link", Fix: "rm " + path}
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err == nil {
		err = checkFile(path, fi, write)
	}
	if err == nil {
		err = PseudoFS(f, path)
	}
	if err == nil && flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		// A file opened to read stays non-blocking: on a file system that
		// honours it (procfs, a FUSE mount), a read that would block
		// fails at once instead of holding up whoever reads.
		err = unix.SetNonblock(fd, false)
	}
	if err == nil && flag&os.O_TRUNC != 0 {
		err = f.Truncate(0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// CheckFile checks that the file at path could be opened for writing, as
// OpenFile checks: a regular file, not a link, of this process's user,
// under one name.
func CheckFile(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	return checkFile(path, fi, true)
}

func checkFile(path string, fi fs.FileInfo, write bool) error {
	if !fi.Mode().IsRegular() {
		return &UnsafeError{Path: path, Problem: "is " + kind(fi) + ", not a regular file", Fix: "rm " + path}
	}
	if !write {
		return nil
	}
	if me, uid := os.Geteuid(), ownerOf(fi); uid != me {
		return &UnsafeError{Path: path, Problem: "is owned by " + userName(uid) + ", not by " + userName(me), Fix: "rm " + path}
	}
	if n := linksOf(fi); n > 1 {
		return &UnsafeError{Path: path, Problem: "has other names (hard links): it may be another's file", Fix: "rm " + path}
	}
	return nil
}
