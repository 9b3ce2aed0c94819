//go:build unix

package proc

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// SignalNamed maps a signal's name as plugins.yaml spells it ("SIGTERM")
// to the signal; "" and unknown names are SIGTERM (check KnownSignal
// first where a name comes from outside).
func SignalNamed(name string) syscall.Signal {
	if s := unix.SignalNum(name); s != 0 {
		return s
	}
	return syscall.SIGTERM
}

// KnownSignal reports whether name names a signal of this system.
func KnownSignal(name string) bool { return unix.SignalNum(name) != 0 }

// SignalName names a signal as plugins.yaml does: "SIGKILL".
func SignalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return s.String()
}
