package elect

import (
	"os"

	"golang.org/x/sys/windows"
)

// openShared opens path for reading and lets others delete or rename over
// it meanwhile. os.Open does not share delete (golang/go#32088), and
// MoveFileEx cannot replace a file open that way: a follower reading the
// lease would make the leader's renewal fail, and a failed renewal demotes.
func openShared(path string) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}

// syncDir does nothing: Windows cannot flush a directory through os, and
// NTFS journals the rename.
func syncDir(string) error { return nil }
