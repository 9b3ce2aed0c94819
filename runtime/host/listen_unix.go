//go:build unix

package host

import (
	"net"
	"os"
	"syscall"
)

// listenPrivate listens on a unix socket of mode 0600, so only its owner
// may talk to the host. The umask is set around the bind (while the host
// starts and creates nothing else), so the socket is never open to others
// even for a moment.
func listenPrivate(path string) (net.Listener, error) {
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
