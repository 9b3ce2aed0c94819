//go:build !unix

package safefs

import (
	"errors"
	"io/fs"
	"os"
)

// Root makes the state dir dir. Graft's daemons run on Unix systems only;
// elsewhere no owner or mode is checked.
func Root(dir string, perm os.FileMode) error { return Dir(dir, perm) }

// Dir makes dir, and checks that it is a directory.
func Dir(dir string, perm os.FileMode) error {
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &UnsafeError{Path: dir, Problem: "is not a directory", Fix: "move " + dir + " away"}
	}
	return nil
}

// Check checks that dir, if it exists, is a directory.
func Check(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &UnsafeError{Path: dir, Problem: "is not a directory", Fix: "move " + dir + " away"}
	}
	return nil
}

// OpenFile opens the file at path, and refuses anything but a regular
// file.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, &UnsafeError{Path: path, Problem: "is not a regular file", Fix: "remove " + path}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return os.OpenFile(path, flag, perm)
}

// CheckFile checks that path is a regular file.
func CheckFile(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &UnsafeError{Path: path, Problem: "is not a regular file", Fix: "remove " + path}
	}
	return nil
}
