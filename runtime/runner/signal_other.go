//go:build !unix

package runner

import "syscall"

func signalNamed(name string) syscall.Signal {
	if name == "SIGKILL" {
		return syscall.SIGKILL
	}
	return syscall.SIGTERM
}

func knownSignal(name string) bool { return name == "SIGTERM" || name == "SIGKILL" }

func signalName(s syscall.Signal) string {
	if s == syscall.SIGKILL {
		return "SIGKILL"
	}
	return "SIGTERM"
}
