//go:build linux

package local

import (
	"syscall"

	"golang.org/x/sys/unix"
)

func syscallKill(pid int) { syscall.Kill(pid, syscall.SIGKILL) }

func getsid(pid int) (int, error) { return unix.Getsid(pid) }
