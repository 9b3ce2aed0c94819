package proc

import (
	"os"

	"golang.org/x/sys/unix"
)

// readProc reads a file of /proc whole, in three system calls for most:
// open, read, close. os.ReadFile would also stat it and try it in the
// runtime's poller first, nine calls in all, on paths that every start,
// stop and family look take.
func readProc(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 512)
	for {
		n, err := unix.Read(fd, b[len(b):cap(b)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return b, nil
		}
		b = b[:len(b)+n]
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // room to read on
		}
	}
}
