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

// Dir is a directory of this user's alone for sockets (SocketDir).
type Dir struct {
	// Path is the directory.
	Path string
	// Fresh is a directory made for its caller alone, which removes it
	// (Remove) once its sockets are gone.
	Fresh bool
	// Unused, when not nil, is why $XDG_RUNTIME_DIR/graft, though
	// XDG_RUNTIME_DIR is set, was not used (a *DirError when it is not
	// this user's alone): the caller warns of it.
	Unused error
}

// Remove removes the directory when it was made for its caller (Fresh)
// and is empty; a shared one stays.
func (d Dir) Remove() {
	if d.Fresh {
		os.Remove(d.Path)
	}
}

// SocketDir returns a directory of this user's alone for the sockets of
// a daemon whose state dir's path is too long for a socket address
// (docs/state-dir.md#sockets-elsewhere).
//
// With XDG_RUNTIME_DIR set, it is $XDG_RUNTIME_DIR/graft (made mode 0700
// when missing, and checked by PrivateDir): the user's runtime directory
// is theirs alone, so no one else can have made it, and it is shared by
// the user's daemons. Otherwise, or when that directory will not do (its
// error is Dir.Unused), it is a directory made now with mode 0700 and an
// unpredictable name, graft-<uid>-<random> in the temporary directory:
// Fresh, its caller's alone. A fixed name in a shared temporary
// directory (graft-<uid>, as graft once used) is one another user can
// make first, to deny graft its socket, or to wait there with a socket
// of their own; mkdir with a random part, which fails rather than take
// a name that exists, makes a directory no one else can have made. No
// one needs to guess its name: each daemon records where it listens in
// its state dir. One left by a daemon that died is harmless: it is this
// user's, mode 0700, and nothing names it any more.
func SocketDir() (Dir, error) {
	var unused error
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		dir := filepath.Join(rt, "graft")
		if unused = PrivateDir(dir); unused == nil {
			return Dir{Path: dir}, nil
		}
	}
	prefix := "graft-"
	if uid := os.Getuid(); uid >= 0 { // -1 on Windows, whose temporary directory is the user's own
		prefix += strconv.Itoa(uid) + "-"
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return Dir{}, fmt.Errorf("make a socket directory: %w", err)
	}
	// Made by this process, mode 0700; checked all the same, in case
	// the temporary directory lets others rename what is in it.
	if err := PrivateDir(dir); err != nil {
		os.Remove(dir)
		return Dir{}, err
	}
	return Dir{Path: dir, Fresh: true, Unused: unused}, nil
}
