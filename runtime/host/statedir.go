package host

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/privsock"
	"github.com/graftland/graft/plan"
)

// The files of a state dir.
const (
	lockFile     = "host.lock"      // held (flock) by the one host; holds its pid
	socketFile   = "host.sock"      // the control socket, when its path is short enough
	socketLink   = "host.sock.path" // else: the path of the socket, elsewhere
	appliedFile  = "applied.json"   // the last applied spec
	logDir       = "logs"           // one rotated log per plugin
	wasmCacheDir = "wasm-cache"     // compiled WebAssembly modules, by content
	HostLog      = "host.log"       // the output of a host started in the background
	runnerDir    = "runner"         // the state of the runner embedded in the host
	runnerSocket = "runner.sock"    // where the embedded runner listens
)

// maxSocketPath is what a unix socket address holds on Linux, less the
// terminating NUL (sun_path is 108 bytes; 104 on the BSDs and macOS).
const maxSocketPath = 103

// SocketPath returns where the host of state dir dir listens: host.sock
// in it, or, when that path is too long for a unix socket, a short path
// in the user's own socket directory (privsock.SocketDir) named by a
// digest of dir.
func SocketPath(dir string) (string, error) { return socketIn(dir, socketFile) }

// socketIn is the path of socket name in dir, or, when that is too long
// for a unix socket, a short path in the user's own socket directory
// ($XDG_RUNTIME_DIR/graft, else graft-<uid> in the temporary directory,
// mode 0700: see privsock.SocketDir) named by a digest of both.
func socketIn(dir, name string) (string, error) {
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

// HeldError is returned when another host holds the state dir.
type HeldError struct {
	Dir string
	PID int
}

func (e *HeldError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("another host holds the state dir %s", e.Dir)
	}
	return fmt.Sprintf("another host (pid %d) holds the state dir %s", e.PID, e.Dir)
}

// Hint tells the operator what to do about it.
func (e *HeldError) Hint() string {
	return "graft status --state-dir " + e.Dir + " (to see it), or graft down (to stop it)"
}

// applied is the last applied spec, as stored in the state dir.
type applied struct {
	Source plan.Source `json:"source"`
	// Digest is the spec's spec.Spec.Digest.
	Digest string    `json:"digest"`
	At     time.Time `json:"at"`
}

// loadApplied reads the last applied spec; nil if none was.
func loadApplied(dir string) (*applied, error) {
	b, err := os.ReadFile(filepath.Join(dir, appliedFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var a applied
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, appliedFile), err)
	}
	return &a, nil
}

// saveApplied records the spec an apply is bringing about, before the
// apply begins, so that a host started again converges on it.
func saveApplied(dir string, a *applied) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, appliedFile), append(b, '\n'), 0o600)
}
