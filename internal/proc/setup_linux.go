package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A Cmd with a Umask or Limits starts as this program run again
// (/proc/self/exe) with argv[0] setupArg0 and setupEnv=setupVersion as
// the last variable of its environment: the package's init function
// then sets them, and its Cred, and executes the program in the same
// process, with the environment it was meant to have.
//
// Why a setup, not the spawn itself: Go's fork-and-exec has no hook for
// resource limits, which are the whole process's (a thread cannot hold
// its own), so the spawning process cannot set them on itself for one
// child; prlimit(2) on the child from outside races its exec (the
// program may already run, and have read its limits, by then). The
// setup sets them in the child before the program exists. It runs as
// this process's user, so that a hard limit is raised (with root's
// CAP_SYS_RESOURCE) before the ids are dropped, as the spawn would
// otherwise drop them; and the parent-death signal, which the kernel
// clears when the ids change, is set again after. The program's pid,
// process group and pidfd are the setup's: the process is watched from
// its fork as any other. A failure is reported on the process's output,
// and it exits 127.
const (
	setupArg0    = "graft-setup"
	setupEnv     = "GRAFT_PROC_SETUP"
	setupVersion = "1"
)

// needsSetup reports whether c starts through the setup.
func (c *Cmd) needsSetup() bool { return c.Umask != nil || len(c.Limits) > 0 || len(c.Files) > 0 }

// throughSetup is c started through the setup, and the path of the setup
// to execute: the program, umask, limits and credential are its
// arguments, and the setup takes on Cred itself.
func (c Cmd) throughSetup(path string) (Cmd, string) {
	umask := ""
	if c.Umask != nil {
		umask = strconv.FormatUint(uint64(*c.Umask), 8)
	}
	limits := make([]string, len(c.Limits))
	for i, l := range c.Limits {
		limits[i] = fmt.Sprintf("%d:%d:%d", l.Resource, l.Soft, l.Hard)
	}
	c.Argv = append([]string{setupArg0, path, umask, strings.Join(limits, ","), encodeCred(c.Cred)}, c.Argv...)
	c.Env = append(c.Env[:len(c.Env):len(c.Env)], setupEnv+"="+setupVersion)
	c.Cred = nil
	return c, "/proc/self/exe"
}

func init() {
	if len(os.Args) >= 6 && os.Args[0] == setupArg0 && len(os.Environ()) > 0 {
		env := os.Environ()
		if env[len(env)-1] != setupEnv+"="+setupVersion {
			return
		}
		err := runSetup(os.Args[1:], env[:len(env)-1])
		fmt.Fprintf(os.Stderr, "graft: start %s: %v\n", os.Args[1], err)
		os.Exit(127)
	}
}

// runSetup sets the umask, limits and credential that args give, and
// executes the program with env; it returns only when it cannot.
func runSetup(args, env []string) error {
	path, umask, limits, cred, argv := args[0], args[1], args[2], args[3], args[4:]
	if umask != "" {
		m, err := strconv.ParseUint(umask, 8, 32)
		if err != nil {
			return fmt.Errorf("bad umask %q", umask)
		}
		unix.Umask(int(m))
	}
	if limits != "" {
		for _, l := range strings.Split(limits, ",") {
			if err := setLimit(l); err != nil {
				return err
			}
		}
	}
	c, err := decodeCred(cred)
	if err != nil {
		return err
	}
	if c != nil {
		if err := becomeCred(c); err != nil {
			return err
		}
	}
	return syscall.Exec(path, argv, withListenPID(env))
}

// withListenPID is env with LISTEN_PID set to this process's pid, when
// it sets LISTEN_FDS: socket activation's check that the sockets are the
// program's, by the pid it sees of itself (in its PID namespace).
func withListenPID(env []string) []string {
	fds := false
	out := env[:0:0]
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, "LISTEN_PID="):
			continue
		case strings.HasPrefix(kv, "LISTEN_FDS="):
			fds = true
		}
		out = append(out, kv)
	}
	if !fds {
		return env
	}
	return append(out, "LISTEN_PID="+strconv.Itoa(os.Getpid()))
}

// setLimit sets one "RESOURCE:SOFT:HARD". x/sys/unix's Setrlimit goes
// through the runtime's prlimit, which tells the exec not to put back the
// soft file limit the runtime raised at its start.
func setLimit(s string) error {
	f := strings.Split(s, ":")
	var n [3]uint64
	for i := range n {
		v, err := strconv.ParseUint(f[min(i, len(f)-1)], 10, 64)
		if err != nil || len(f) != 3 {
			return fmt.Errorf("bad limit %q", s)
		}
		n[i] = v
	}
	if err := unix.Setrlimit(int(n[0]), &unix.Rlimit{Cur: n[1], Max: n[2]}); err != nil {
		return fmt.Errorf("set resource limit %d to %d (soft), %d (hard): %w", n[0], n[1], n[2], err)
	}
	return nil
}

// becomeCred takes on c's groups, gid and uid, in that order (each on
// every thread of the runtime), and sets the parent-death signal again:
// changing ids clears it. A parent that died meanwhile ends the setup.
func becomeCred(c *Cred) error {
	var sig int32
	if err := unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0, 0, 0); err != nil {
		return fmt.Errorf("read the parent-death signal: %w", err)
	}
	ppid := os.Getppid()
	groups := make([]int, len(c.Groups))
	for i, g := range c.Groups {
		groups[i] = int(g)
	}
	if err := syscall.Setgroups(groups); err != nil {
		return fmt.Errorf("set groups: %w", err)
	}
	if err := syscall.Setgid(int(c.Gid)); err != nil {
		return fmt.Errorf("set gid %d: %w", c.Gid, err)
	}
	if err := syscall.Setuid(int(c.Uid)); err != nil {
		return fmt.Errorf("set uid %d: %w", c.Uid, err)
	}
	if sig != 0 {
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(sig), 0, 0, 0); err != nil {
			return fmt.Errorf("set the parent-death signal: %w", err)
		}
		if os.Getppid() != ppid {
			return errors.New("its parent died")
		}
	}
	return nil
}
