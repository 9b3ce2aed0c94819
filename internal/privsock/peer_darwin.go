//go:build darwin

package privsock

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// checkPeer reads the listener's credentials (LOCAL_PEERCRED).
func checkPeer(c *net.UnixConn, path string) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Xucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("%s: read the credentials of its listener: %w", path, cerr)
	}
	if want := os.Getuid(); int(cred.Uid) != want {
		return &PeerError{Socket: path, UID: int(cred.Uid), Want: want}
	}
	return nil
}
