//go:build !unix

package proc

import (
	"errors"
	"os"
)

// Inheritable makes f's descriptor survive an exec: not here.
func Inheritable(*os.File, bool) error { return errors.New("no descriptor survives an exec here") }

// FD is f's descriptor.
func FD(f *os.File) int { return int(f.Fd()) }

// Listening reports no descriptor as a listening socket here: none
// survives an exec.
func Listening(int) (string, bool) { return "", false }
