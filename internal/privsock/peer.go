package privsock

import (
	"context"
	"fmt"
	"net"
)

// PeerError is a socket whose listener runs as another user.
type PeerError struct {
	// Socket is the socket's path.
	Socket string
	// UID is the user its listener runs as; Want is this process's.
	UID, Want int
}

func (e *PeerError) Error() string {
	return fmt.Sprintf("%s: the process listening there runs as uid %d, not as this user (uid %d): graft sent it nothing", e.Socket, e.UID, e.Want)
}

// Hint tells the operator what to do about it.
func (e *PeerError) Hint() string {
	return "another user's program has taken the socket's place: stop it, remove " + e.Socket + ", and start graft's daemon again"
}

// Dial connects to the unix socket at path and checks, before anything
// is sent, that the process listening there runs as this process's user
// (root included: the same uid, not merely a privileged one). Another
// user's is a *PeerError, and the connection is closed.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	if err := checkPeer(c.(*net.UnixConn), path); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}
