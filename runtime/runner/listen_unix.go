//go:build unix

package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
	"time"
)

// listenUnix listens on a unix socket of mode 0600. The umask is set
// around the bind, so the socket is never open to others even for a
// moment: Listen is for a program that runs a runner, which creates
// nothing else meanwhile.
func listenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSocket != 0 {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen on %s: something answers there already", path)
		}
		os.Remove(path)
	} else if err == nil {
		return nil, fmt.Errorf("listen on %s: a file that is not a socket is there", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
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
