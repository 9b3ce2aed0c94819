package etcdtest

import "syscall"

// dieWithParent makes the kernel kill the server should the test's
// process die before it stops the server.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
