//go:build !unix

package privsock

import "os"

// PrivateDir makes dir when it is missing; this system has no owner
// and mode bits to check.
func PrivateDir(dir string) error { return os.MkdirAll(dir, 0o700) }
