//go:build !unix

package host

import (
	"errors"
	"os"
	"time"
)

// StartBackground is not supported off Unix.
func StartBackground(exe, dir string, timeout time.Duration) error {
	return errors.New("the graft host runs on Linux and other Unix systems only")
}

// redirectStdio does nothing here: there is no background host.
func redirectStdio(*os.File) {}
