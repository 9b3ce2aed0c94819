//go:build unix

package runner

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// signalNamed maps a signal's name ("SIGTERM") to it; "" and unknown
// names are SIGTERM (requests are checked with knownSignal first).
func signalNamed(name string) syscall.Signal {
	if s := unix.SignalNum(name); s != 0 {
		return s
	}
	return syscall.SIGTERM
}

func knownSignal(name string) bool { return unix.SignalNum(name) != 0 }

// signalName names a signal as the spec does: "SIGKILL".
func signalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return s.String()
}
