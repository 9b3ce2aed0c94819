//go:build unix

package runner

import (
	"os"

	"golang.org/x/sys/unix"
)

// inheritable makes f survive an exec.
func inheritable(f *os.File) error {
	_, err := unix.FcntlInt(f.Fd(), unix.F_SETFD, 0)
	return err
}
