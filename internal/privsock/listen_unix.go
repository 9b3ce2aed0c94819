//go:build unix

package privsock

import (
	"net"
	"os"
	"syscall"
)

// Listen listens on a unix socket of mode 0600 at path. The umask is set
// around the bind, so the socket is never open to others even for a
// moment; it is the process's umask, so Listen is for a daemon while it
// starts and creates nothing else.
func Listen(path string) (net.Listener, error) {
	old := syscall.Umask(0o077)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}
