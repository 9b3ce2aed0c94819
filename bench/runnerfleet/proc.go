//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A proc is a daemon this program started: a runner or a host, in a
// process group of its own, so that a Ctrl-C at the terminal reaches this
// program alone, which then stops them in order.
type proc struct {
	name string
	file string // a host's plugins file; "" for a runner
	cmd  *exec.Cmd
	done chan struct{}
	err  error // once done
}

// procs are the daemons still to stop at the end, in the order started.
var procs struct {
	sync.Mutex
	list []*proc
}

// spawn starts graft with args, its stderr (and stdout) appended to logPath.
func spawn(name, graft, logPath string, args ...string) (*proc, error) {
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(graft, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	procs.Lock()
	procs.list = append(procs.list, p)
	procs.Unlock()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill9 sends SIGKILL to the daemon's process alone (not its group: what
// its death does to its plugins is what is measured) and waits for it.
func (p *proc) kill9() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends sig and waits up to wait for the daemon to end, then kills
// its process group.
func (p *proc) stop(sig syscall.Signal, wait time.Duration) {
	if p.exited() {
		return
	}
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(wait):
		syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
	}
}

// forget drops p from the daemons to stop at the end (it was stopped).
func forget(p *proc) {
	procs.Lock()
	defer procs.Unlock()
	for i, q := range procs.list {
		if q == p {
			procs.list = append(procs.list[:i], procs.list[i+1:]...)
			return
		}
	}
}

// graftCmd runs graft to its end with a bound and returns its output.
func graftCmd(ctx context.Context, graft string, wait time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, graft, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	err := cmd.Run()
	return out.Bytes(), err
}

// freePort is a loopback TCP port no one listened on a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitListen waits until addr accepts a connection.
func waitListen(ctx context.Context, addr string, p *proc, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if p != nil && p.exited() {
			return fmt.Errorf("%s exited before it listened on %s: %v", p.name, addr, p.err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %s: %v", addr, within, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// cpuNanos is the time pid's threads have spent on a CPU, in
// nanoseconds (the first field of /proc/PID/task/*/schedstat), as
// bench/runner.sh reads it: finer than stat's clock ticks.
func cpuNanos(pid int) (int64, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("no schedstat of pid %d", pid)
	}
	var n int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that ended
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			v, _ := strconv.ParseInt(f[0], 10, 64)
			n += v
		}
	}
	return n, nil
}

// memKB reads VmRSS and VmHWM (the peak) of pid, in KiB.
func memKB(pid int) (rss, hwm int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v
		case "VmHWM:":
			hwm = v
		}
	}
	return rss, hwm
}

// marked lists the live processes whose environment holds marker (a
// plugin of this run carries RUNNERFLEET=<run id>): zombies are left out.
func marked(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	needle := []byte(marker + "\x00")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append(env, 0), needle) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// conns counts the established TCP connections to port on loopback that
// each of pids holds (the client's end: /proc/net/tcp's remote port is
// port), by the socket inodes among their descriptors.
func conns(port int, pids []int) []int {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return nil
	}
	want := fmt.Sprintf(":%04X", port)
	inodes := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "01" || !strings.HasSuffix(f[2], want) {
			continue
		}
		inodes["socket:["+f[9]+"]"] = true
	}
	n := make([]int, len(pids))
	for i, pid := range pids {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && inodes[l] {
				n[i]++
			}
		}
	}
	return n
}
