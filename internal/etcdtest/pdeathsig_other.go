//go:build !linux

package etcdtest

import "syscall"

// dieWithParent has no equivalent here: the test's cleanup stops the
// server.
func dieWithParent() *syscall.SysProcAttr { return nil }
