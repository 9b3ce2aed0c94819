//go:build unix

package privsock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// PrivateDir makes dir, mode 0700, when it is missing, and checks that it
// is this user's alone: a directory, not a symbolic link (none is
// followed), owned by this process's uid, with no permission for group or
// others. Anything else is a *DirError.
func PrivateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("make the socket directory: %w", err)
	}
	return CheckDir(dir)
}

// CheckDir checks, as PrivateDir does, that dir is this user's alone,
// and makes nothing: a client checks so the directory of a socket it is
// told of.
func CheckDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("the socket directory: %w", err)
	}
	remove := "another user may have made it to catch graft's sockets: remove it (rm -r " + dir + "), or set XDG_RUNTIME_DIR to a directory of your own"
	switch st, _ := fi.Sys().(*syscall.Stat_t); {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &DirError{Dir: dir, Why: "it is a symbolic link", Fix: remove}
	case !fi.IsDir():
		return &DirError{Dir: dir, Why: "it is not a directory", Fix: remove}
	case st == nil:
		return &DirError{Dir: dir, Why: "its owner cannot be read", Fix: remove}
	case int(st.Uid) != os.Getuid():
		return &DirError{Dir: dir, Why: fmt.Sprintf("it is owned by uid %d, not by this user (uid %d)", st.Uid, os.Getuid()), Fix: remove}
	case fi.Mode().Perm()&0o077 != 0:
		return &DirError{Dir: dir, Why: fmt.Sprintf("its mode is %#o: others may enter it", fi.Mode().Perm()), Fix: "chmod 700 " + dir}
	}
	return nil
}
