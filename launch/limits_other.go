//go:build !linux

package launch

// Resource is the RLIMIT_ number of a limit's name: none off Linux,
// where graft runs no local processes yet.
func Resource(name string) (int, bool) { return 0, false }

// Ungrantable finds nothing off Linux, which starts no local processes.
func Ungrantable(ls map[string]Limit) Problems { return nil }

// CanRaiseLimits is false off Linux.
func CanRaiseLimits() bool { return false }
