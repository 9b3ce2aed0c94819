package hostapi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/graftland/graft/internal/privsock"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/internal/statedir"
)

// The files of a state dir that a client of its host needs
// (docs/state-dir.md).
const (
	socketFile = statedir.Socket     // the control socket, when its path is short enough
	SocketLink = statedir.SocketLink // else: the path of the socket, elsewhere
	HostLog    = statedir.HostLog    // the output of a host started in the background
)

// maxSocketPath is what a unix socket address holds on Linux, less the
// terminating NUL (sun_path is 108 bytes; 104 on the BSDs and macOS).
const maxSocketPath = 103

// Socket is a unix socket that a daemon of a state dir listens on.
type Socket struct {
	net.Listener
	// Path is where it listens: in the state dir, or elsewhere (Elsewhere).
	Path string
	dir  *privsock.Dir // where it is, when not in the state dir
}

// Listen listens, mode 0600, on the socket name of state dir dir (the
// host's is host.sock; its embedded runner's, another): dir/name, or,
// when that path is too long for a unix socket, name in a directory of
// the user's alone (privsock.SocketDir: one made for this socket alone,
// or $XDG_RUNTIME_DIR/graft, where it is named by a digest of dir and
// name). A socket left at its path by a daemon that died is replaced:
// the caller holds the state dir's lock. The socket's path, when
// elsewhere, is the caller's to record (the host's: SocketLink), for
// clients to find it.
func Listen(dir, name string) (*Socket, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	s := &Socket{Path: filepath.Join(abs, name)}
	if len(s.Path) > maxSocketPath {
		d, err := privsock.SocketDir()
		if err != nil {
			return nil, err
		}
		s.dir = &d
		if s.Path = filepath.Join(d.Path, name); !d.Fresh {
			sum := sha256.Sum256([]byte(filepath.Join(abs, name)))
			s.Path = filepath.Join(d.Path, hex.EncodeToString(sum[:8])+".sock")
		}
		if len(s.Path) > maxSocketPath {
			d.Remove()
			return nil, &socketPathError{dir: abs, path: s.Path}
		}
	}
	if !s.Fresh() {
		os.Remove(s.Path) // a daemon that died left it
	}
	if s.Listener, err = privsock.Listen(s.Path); err != nil {
		s.Remove()
		return nil, fmt.Errorf("listen on %s: %w", s.Path, err)
	}
	return s, nil
}

// Elsewhere reports whether the socket is outside its state dir.
func (s *Socket) Elsewhere() bool { return s.dir != nil }

// Fresh reports whether the socket is in a directory made for it alone.
func (s *Socket) Fresh() bool { return s.dir != nil && s.dir.Fresh }

// Unused is why $XDG_RUNTIME_DIR/graft was not used for a socket
// elsewhere, or nil: the caller warns of it.
func (s *Socket) Unused() error {
	if s.dir == nil {
		return nil
	}
	return s.dir.Unused
}

// Remove removes the socket and the directory made for it; it is called
// once the listener is closed.
func (s *Socket) Remove() {
	os.Remove(s.Path)
	if s.dir != nil {
		s.dir.Remove()
	}
}

// SocketPath returns where the host of state dir dir listens: the path
// its host recorded (SocketLink), else host.sock in dir. A dir too deep
// for host.sock whose host recorded nothing has no host: ErrNoHost.
// Nothing is made: the socket directory is the host's to make.
//
// A recorded socket whose directory is not this user's alone
// (privsock.CheckDir) is no host's of this user either (ErrNoHost): the
// link is one a host that died left, naming a directory since removed
// and perhaps made again by someone else. Such a link is never followed,
// and the next host replaces it. (A listener of another user's in a
// directory of this user's is refused as well, by privsock.Dial.)
func SocketPath(dir string) (string, error) {
	link := filepath.Join(dir, SocketLink)
	if b, err := safefs.ReadFile(link, 4096); err == nil {
		p := strings.TrimSpace(string(b))
		if err := privsock.CheckDir(filepath.Dir(p)); err != nil {
			return "", fmt.Errorf("%s names %s, but %w: %w", link, p, err, ErrNoHost)
		}
		return p, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if p := filepath.Join(abs, socketFile); len(p) <= maxSocketPath {
		return p, nil
	}
	return "", fmt.Errorf("%s records no socket: %w", filepath.Join(abs, SocketLink), ErrNoHost)
}

// socketPathError is a state dir whose socket fits neither in it nor in
// the user's socket directory.
type socketPathError struct{ dir, path string }

func (e *socketPathError) Error() string {
	return fmt.Sprintf("the state dir %s is too deep for a unix socket, and so is the socket directory: %s is over %d bytes", e.dir, e.path, maxSocketPath)
}

// Hint tells the operator what to do about it.
func (e *socketPathError) Hint() string {
	return "set XDG_RUNTIME_DIR (or TMPDIR) to a shorter directory of your own, or use a shorter --state-dir"
}
