// Package atomicfile writes files so that a crash or a full disk leaves
// the old file or the new one, never half of one.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// Write writes data to path through a temporary file in the same
// directory: written, synced, renamed over path, and the directory synced
// so the rename itself survives a crash. On failure path is untouched and
// the error names path, not the temporary file.
func Write(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	err = write(tmp, data, perm)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: path, Err: Cause(err)}
	}
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return &DirSyncError{Err: err}
	}
	return nil
}

// DirSyncError is the error of a Write that renamed its file into place
// but could not sync the directory: path holds the new data, which a
// crash may still undo.
type DirSyncError struct{ Err error }

func (e *DirSyncError) Error() string { return e.Err.Error() }
func (e *DirSyncError) Unwrap() error { return e.Err }

func write(f *os.File, data []byte, perm os.FileMode) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	return f.Sync()
}

// SyncDir makes the entries of dir durable: a rename in it, or a
// directory just made there.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// Cause is the cause of a *os.PathError or *os.LinkError, which a
// write's own error then names with the file's path.
func Cause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
