//go:build unix

package safefs

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// Root makes the state dir dir as Dir does, except that dir may be a
// symbolic link, of this process's user or of root, to a directory that
// passes: an operator may keep a state dir elsewhere.
func Root(dir string, perm os.FileMode) error {
	if err := mkdir(dir, perm); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return checkDir(dir, fi)
	}
	if me, uid := os.Geteuid(), ownerOf(fi); uid != me && uid != 0 {
		trusted := userName(me)
		if me != 0 {
			trusted += " or root"
		}
		return &UnsafeError{Path: dir,
			Problem: "is a symbolic link of " + userName(uid) + ", not of " + trusted,
			Fix:     "rm " + dir + " (the link), and give graft the directory itself"}
	}
	if fi, err = os.Stat(dir); err != nil {
		return err
	}
	return checkDir(dir, fi)
}

// Dir makes dir with mode perm, and its missing parents as os.MkdirAll
// does, unless it exists; then it checks that dir can be trusted with
// graft's state: a real directory (not a symbolic link), owned by this
// process's user, that neither its group nor others may write. A
// directory that fails is an *UnsafeError that names it and the fix.
func Dir(dir string, perm os.FileMode) error {
	if err := mkdir(dir, perm); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	return checkDir(dir, fi)
}

// Check checks dir as Dir does, if it exists: a missing dir is nil.
func Check(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return checkDir(dir, fi)
}

func mkdir(dir string, perm os.FileMode) error {
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		return nil // checked next, whatever it is
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	return nil
}

func checkDir(dir string, fi fs.FileInfo) error {
	me := os.Geteuid()
	switch uid := ownerOf(fi); {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &UnsafeError{Path: dir, Problem: "is a symbolic link, where graft keeps a directory",
			Fix: "rm " + dir + " (the link: graft makes the directory)"}
	case !fi.IsDir():
		return &UnsafeError{Path: dir, Problem: "is " + kind(fi) + ", where graft keeps a directory",
			Fix: "mv " + dir + " " + dir + ".old (graft makes the directory)"}
	case uid != me:
		return &UnsafeError{Path: dir, Problem: "is owned by " + userName(uid) + ", not by " + userName(me),
			Fix: "check what " + dir + " holds, then chown -R " + owner(me) + " " + dir + "; or move it away, and graft makes a new one"}
	case fi.Mode().Perm()&0o022 != 0:
		return &UnsafeError{Path: dir, Problem: "may be written by " + writers(fi.Mode()),
			Fix: "chmod go-w " + dir}
	}
	return nil
}

// writers says who, besides the owner, may write a file of mode m.
func writers(m fs.FileMode) string {
	switch m.Perm() & 0o022 {
	case 0o020:
		return "its group"
	case 0o002:
		return "others"
	}
	return "its group and others"
}

// kind names the type of a file that is not what it should be.
func kind(fi fs.FileInfo) string {
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}

func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

func linksOf(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
