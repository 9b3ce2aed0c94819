//go:build !linux

package runner

import "os"

// datasync is a full sync where fdatasync(2) is not to be had.
func datasync(f *os.File) error { return f.Sync() }
