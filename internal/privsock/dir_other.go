//go:build !unix

package privsock

import (
	"fmt"
	"os"
)

// PrivateDir makes dir when it is missing; this system has no owner
// and mode bits to check.
func PrivateDir(dir string) error { return os.MkdirAll(dir, 0o700) }

// CheckDir checks that dir is a directory; this system has no owner and
// mode bits to check.
func CheckDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("the socket directory: %w", err)
	}
	if !fi.IsDir() {
		return &DirError{Dir: dir, Why: "it is not a directory", Fix: "remove it"}
	}
	return nil
}
