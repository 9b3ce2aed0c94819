package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// colorful reports whether output to w gets ANSI colours: --color always,
// or --color auto on a terminal when NO_COLOR (https://no-color.org) is
// unset or empty.
func (g *Globals) colorful(w io.Writer) bool {
	switch g.Color {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory, synced and renamed, so a reader never sees half a file and a
// full disk leaves the old file in place.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // name the file asked for, not the temporary one
		}
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	defer os.Remove(tmp.Name()) // after a successful rename this fails harmlessly
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
