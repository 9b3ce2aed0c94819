package privsock

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// DirError is a socket directory that is not its user's alone.
type DirError struct {
	Dir string
	// Why says what is wrong with it.
	Why string
	// Fix is what the operator may do about it.
	Fix string
}

func (e *DirError) Error() string {
	return fmt.Sprintf("the socket directory %s is not this user's alone: %s", e.Dir, e.Why)
}

// Hint tells the operator what to do about it.
func (e *DirError) Hint() string { return e.Fix }

// SocketDir returns the directory that holds the sockets of this user's
// state dirs whose paths are too long for a socket address:
// $XDG_RUNTIME_DIR/graft, else graft-<uid> in the temporary directory.
// It is made mode 0700 when missing, and refused (a *DirError) when it
// is a symbolic link, another user's, or open to others: a shared
// temporary directory is where another user could wait with a socket of
// their own.
func SocketDir() (string, error) {
	name := "graft"
	if uid := os.Getuid(); uid >= 0 { // -1 on Windows, whose temporary directory is the user's own
		name += "-" + strconv.Itoa(uid)
	}
	dir := filepath.Join(os.TempDir(), name)
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		dir = filepath.Join(rt, "graft")
	}
	if err := PrivateDir(dir); err != nil {
		return "", err
	}
	return dir, nil
}
