//go:build !unix

package hostapi

// gone reports whether process pid has ended; where it cannot be told,
// the host's closed socket says so.
func gone(pid int) bool { return true }
