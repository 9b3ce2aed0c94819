// Package safefs opens the files of a state dir so that no one else can
// make graft write or read what they choose: a state dir and its
// subdirectories must be real directories of graft's own user that no one
// else may write (as ssh's StrictModes asks of ~/.ssh), and a file is opened
// only if it is a regular file reached without a symbolic link. See
// docs/state-dir.md.
package safefs

import (
	"fmt"
	"os/user"
	"strconv"
)

// UnsafeError is a path graft does not trust with its state: a directory
// another user owns or may write, a symbolic link, a named pipe or a
// device where a file or directory should be, a file another user owns.
type UnsafeError struct {
	// Path is the path refused.
	Path string
	// Problem says what is wrong with it: "is owned by nobody (uid 65534),
	// not by root (uid 0)".
	Problem string
	// Fix is what the operator can do about it: a command.
	Fix string
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("unsafe path %s: it %s; graft keeps its state only in directories and files of its own user that no one else may write", e.Path, e.Problem)
}

// Hint tells the operator what to do about it.
func (e *UnsafeError) Hint() string { return e.Fix }

// userName is how an error names uid: "nobody (uid 65534)".
func userName(uid int) string {
	id := strconv.Itoa(uid)
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		return u.Username + " (uid " + id + ")"
	}
	return "uid " + id
}

// owner is what chown is told to make the owner: the user's name, else
// its uid.
func owner(uid int) string {
	id := strconv.Itoa(uid)
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		return u.Username
	}
	return id
}
