//go:build linux

package privsock

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// checkPeer reads the listener's credentials (SO_PEERCRED, as they were
// when it called listen).
func checkPeer(c *net.UnixConn, path string) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
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
