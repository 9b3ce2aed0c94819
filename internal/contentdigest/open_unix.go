//go:build unix

package contentdigest

import (
	"fmt"
	"os"
	"syscall"

	"github.com/graftland/graft/internal/safefs"
)

// openContent opens a file a spec names to read its content: following
// links (a spec's files may be links), non-blocking, so that a file
// whose read would block (a FIFO, a device, procfs's kmsg) fails at once,
// and refused when it is not a regular file as the open file says, or is
// a file of a pseudo file system (safefs.PseudoFS), whose content is no file's.
func openContent(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%s: not a regular file or directory", path)
	default:
		err = safefs.PseudoFS(f, path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkDir refuses a directory of a pseudo file system (/proc, /sys),
// whose tree is the kernel's state, not a plugin's files.
func checkDir(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return safefs.PseudoFS(f, path)
}
