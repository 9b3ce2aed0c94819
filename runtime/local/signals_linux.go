package local

import (
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// signalNamed maps a spec signal name ("SIGTERM") to the signal.
func signalNamed(name string) syscall.Signal {
	if s := unix.SignalNum(name); s != 0 {
		return s
	}
	return syscall.SIGTERM
}

// signalName names a signal as the spec does: "SIGKILL".
func signalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return "signal " + strings.TrimPrefix(s.String(), "signal ")
}
