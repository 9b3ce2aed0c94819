package proc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The init of a PID namespace is this program run again (/proc/self/exe)
// with argv[0] initArg0 and initEnv=initVersion in its environment. Every
// program that links this package can be one: the package's init function
// turns it into the namespace's init before main runs.
const (
	initArg0    = "graft-init"
	initEnv     = "GRAFT_PROC_INIT"
	initVersion = "1"
	// The init's end of the control pipe (spec, then "reap") and of the
	// report pipe ("pid N" or "err ERRNO", then "status WAITSTATUS").
	initCtlFD    = 3
	initReportFD = 4
)

// initSpec is what the init starts: the plugin's program, resolved by
// the spawning process, with its arguments, directory and environment.
type initSpec struct {
	Path string   `json:"path"`
	Argv []string `json:"argv"`
	Dir  string   `json:"dir"`
	Env  []string `json:"env"`
}

func init() {
	if len(os.Args) == 1 && os.Args[0] == initArg0 && os.Getenv(initEnv) == initVersion {
		os.Exit(runInit())
	}
}

// runInit is the init of a plugin's PID namespace, pid 1 there. It starts
// the plugin (pid 2), reports its pid once the plugin's program runs,
// reaps the orphans the namespace's processes leave, and keeps the
// plugin, once it has exited, a zombie until the spawning process says
// "reap", so that its pid and process group id name nothing else while
// its family is stopped. When it exits, the kernel kills whatever is left
// in the namespace; it exits when told to reap, and when its control pipe
// ends without that: the spawning process died. It also has that
// process's parent-death signal, SIGKILL.
func runInit() int {
	syscall.CloseOnExec(initCtlFD)
	syscall.CloseOnExec(initReportFD)
	ctl := bufio.NewReader(os.NewFile(initCtlFD, "ctl"))
	report := os.NewFile(initReportFD, "report")
	// As a namespace's init it gets only the signals it handles: none
	// from the plugin's family shall end it. They are caught and dropped,
	// not ignored, which the plugin would inherit.
	drop := make(chan os.Signal, 1)
	signal.Notify(drop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	line, err := ctl.ReadBytes('\n')
	if err != nil {
		return 0 // no spec: the spawner's probe, or it died
	}
	var spec initSpec
	if err := json.Unmarshal(line, &spec); err != nil {
		fmt.Fprintf(report, "err %d\n", syscall.EINVAL)
		return 1
	}
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	pid, ok := startPlugin(spec, report)
	if !ok {
		return 1
	}
	return supervise(pid, chld, drop, commands(ctl), report)
}

// startPlugin starts the plugin of spec in a process group of its own and
// reports "pid N" once its program runs, or "err ERRNO" and false.
func startPlugin(spec initSpec, report *os.File) (pid int, ok bool) {
	pid, err := syscall.ForkExec(spec.Path, spec.Argv, &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		errno, ok := err.(syscall.Errno)
		if !ok {
			errno = syscall.EINVAL
		}
		fmt.Fprintf(report, "err %d\n", errno)
		return 0, false
	}
	// The plugin's output is its own: the init lets go of it (stdin is
	// /dev/null), so the reader sees its end when the plugin's family is
	// gone.
	unix.Dup2(0, 1)
	unix.Dup2(0, 2)
	fmt.Fprintf(report, "pid %d\n", pid)
	return pid, true
}

// commands delivers the lines of the control pipe after the spec, and is
// closed when the pipe ends.
func commands(ctl *bufio.Reader) <-chan string {
	cmds := make(chan string)
	go func() {
		defer close(cmds)
		for {
			line, err := ctl.ReadString('\n')
			if err != nil {
				return
			}
			cmds <- strings.TrimSpace(line)
		}
	}()
	return cmds
}

// supervise reaps the orphans of the namespace, on every SIGCHLD and every
// signal dropped, until the spawning process says "reap": then it reaps
// the plugin, reports "status WAITSTATUS" and returns the init's exit
// code. It returns as well when the control pipe ends: the spawning
// process is gone.
func supervise(pid int, chld, drop <-chan os.Signal, cmds <-chan string, report *os.File) int {
	exited := false
	for {
		if !exited {
			exited = reapOthers(pid)
		}
		select {
		case <-chld:
		case <-drop:
		case cmd, ok := <-cmds:
			if !ok {
				return 0 // the spawning process is gone
			}
			if cmd == "reap" {
				fmt.Fprintf(report, "status %d\n", uint32(reap(pid)))
				return 0
			}
		}
	}
}

// reap waits for pid, through any EINTR, and returns its status.
func reap(pid int) syscall.WaitStatus {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if err != syscall.EINTR {
			return ws
		}
	}
}

// reapOthers reaps the terminated children of the init but plugin, and
// reports whether plugin has terminated. Once it has, it is left
// unreaped, and so are the children that terminate after it (waitid
// finds plugin first): until the init exits, which the spawning process
// has it do once it has stopped the plugin's family.
func reapOthers(plugin int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false
		}
		pid := siginfoPid(&info)
		switch pid {
		case 0:
			return false // none has terminated
		case plugin:
			return true
		}
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}

// siginfoPid reads si_pid, the first field of siginfo_t's union, which
// follows three ints aligned to a pointer: at byte 16 on 64-bit systems,
// 12 on 32-bit ones. x/sys/unix leaves the union opaque.
func siginfoPid(info *unix.Siginfo) int {
	const off = 3*4 + (unsafe.Sizeof(uintptr(0)) - 4)
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), off)))
}
