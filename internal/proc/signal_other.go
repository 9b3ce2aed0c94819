//go:build !unix

package proc

import "syscall"

// SignalNamed maps "SIGKILL" to SIGKILL and every other name to SIGTERM:
// the signals this system has.
func SignalNamed(name string) syscall.Signal {
	if name == "SIGKILL" {
		return syscall.SIGKILL
	}
	return syscall.SIGTERM
}

// KnownSignal reports whether name names a signal of this system.
func KnownSignal(name string) bool { return name == "SIGTERM" || name == "SIGKILL" }

// SignalName names a signal as plugins.yaml does: "SIGKILL".
func SignalName(s syscall.Signal) string {
	if s == syscall.SIGKILL {
		return "SIGKILL"
	}
	return "SIGTERM"
}
