package runner

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync is fdatasync(2): f's data and size, without the times a full
// sync also writes.
func datasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	// Control holds f open until the sync returns.
	if cerr := rc.Control(func(fd uintptr) { err = unix.Fdatasync(int(fd)) }); cerr != nil {
		return cerr
	}
	return err
}
