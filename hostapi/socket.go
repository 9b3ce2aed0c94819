package hostapi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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

// SocketPath returns where the host of state dir dir listens: host.sock
// in it, or, when that path is too long for a unix socket, a short path
// in the user's own socket directory (privsock.SocketDir) named by a
// digest of dir.
func SocketPath(dir string) (string, error) { return SocketIn(dir, socketFile) }

// SocketIn is the path of socket name in state dir dir, or, when that is
// too long for a unix socket, a short path in the user's own socket
// directory ($XDG_RUNTIME_DIR/graft, else graft-<uid> in the temporary
// directory, mode 0700: see privsock.SocketDir) named by a digest of both.
// The host's own socket is SocketPath; the host's embedded runner listens
// on another.
func SocketIn(dir, name string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if p := filepath.Join(abs, name); len(p) <= maxSocketPath {
		return p, nil
	}
	base, err := privsock.SocketDir()
	if err != nil {
		return "", err
	}
	key := abs
	if name != socketFile {
		key = filepath.Join(abs, name)
	}
	sum := sha256.Sum256([]byte(key))
	p := filepath.Join(base, hex.EncodeToString(sum[:8])+".sock")
	if len(p) > maxSocketPath {
		return "", &socketPathError{dir: abs, path: p}
	}
	return p, nil
}

// socketOf finds the socket of the host of dir: the one its host recorded
// (SocketLink), else where SocketPath says.
func socketOf(dir string) (string, error) {
	if b, err := safefs.ReadFile(filepath.Join(dir, SocketLink), 4096); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	return SocketPath(dir)
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
