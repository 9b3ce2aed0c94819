package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spawner starts processes from one OS thread that it keeps for as long as
// it is open. Linux delivers a child's parent-death signal when the thread
// that forked it exits, not the process (golang/go#27505): forking from an
// ordinary goroutine, whose thread the Go runtime may retire, can kill a
// healthy child at random, while forking from a thread that lives exactly
// as long as the Spawner means children die with the host and only then.
type Spawner struct {
	work    chan func()
	quit    chan struct{}
	done    chan struct{}
	once    sync.Once
	devnull *os.File // every child's stdin, opened once

	isoOnce sync.Once
	iso     Isolation
	nsMu    sync.Mutex
	ns      *nsInit        // the init of its namespace, once made
	inits   sync.WaitGroup // its inits' readers, which reap them when they end
	// handover is where its init waits for the next host, and window and
	// all what it keeps meanwhile (nshold_linux.go); under nsMu.
	handover Handover
	window   time.Duration
	all      bool
}

// NewSpawner starts a Spawner's thread.
func NewSpawner() *Spawner {
	s := &Spawner{work: make(chan func()), quit: make(chan struct{}), done: make(chan struct{})}
	s.devnull, _ = os.Open(os.DevNull) // a missing /dev/null fails each Start instead
	started := make(chan struct{})
	go s.loop(started)
	<-started
	return s
}

func (s *Spawner) loop(started chan<- struct{}) {
	defer close(s.done)
	// Never unlocked: when loop returns, the runtime ends the thread, and
	// any child still alive gets its parent-death signal.
	runtime.LockOSThread()
	close(started)
	for {
		select {
		case f := <-s.work:
			f()
		case <-s.quit:
			return
		}
	}
}

// Close ends the Spawner's thread. Children it started that still run get
// their parent-death signal (SIGKILL), and so does the init of its
// namespace, and with it every process there: callers stop them first.
// It returns once the init is gone.
func (s *Spawner) Close() {
	s.once.Do(func() {
		close(s.quit)
		<-s.done // a start under way finishes first
		if s.devnull != nil {
			s.devnull.Close()
		}
		s.nsMu.Lock()
		if s.ns != nil {
			s.ns.quit() // nothing is kept: its plugins were stopped
			s.ns.close()
		}
		s.nsMu.Unlock()
		s.inits.Wait()
		if s.ns != nil && s.handover.Socket != "" {
			os.Remove(s.handover.Socket) // its init, which listened there, has ended
		}
	})
	<-s.done
}

// Start starts c in a new process group, with a parent-death signal of
// SIGKILL, and returns once the program has been executed (or failed to
// be): a signal sent to it after Start returns reaches the program, never
// a half-made child. With c.Isolate, where the Spawner can (see
// Isolation), c runs in the Spawner's PID namespace instead, as a child of
// its init, which has the parent-death signal.
// With c.Umask or c.Limits, the program executed first is the setup
// (setup_linux.go), which sets them and c.Cred and executes c's program
// in the same process: a failure of that exec shows as an exit of 127,
// its cause on c.Output.
func (s *Spawner) Start(c Cmd) (*Process, error) {
	if len(c.Argv) == 0 {
		return nil, errors.New("start: empty command")
	}
	path, err := lookPath(c.Argv[0], c.Dir, c.Env)
	if err != nil {
		return nil, err
	}
	if c.needsSetup() {
		c, path = c.throughSetup(path)
	}
	devnull := s.devnull
	if devnull == nil {
		return nil, fmt.Errorf("start %s: cannot open %s", c.Argv[0], os.DevNull)
	}
	if c.Isolate {
		if iso := s.Isolation(); iso.Namespace {
			return s.startIsolated(c, path)
		}
	}
	out := devnull
	if c.Output != nil {
		out = c.Output
	}
	type result struct {
		p   *Process
		err error
	}
	res := make(chan result, 1)
	run := func() {
		p, err := forkChild(c, path, devnull, out)
		res <- result{p, err}
	}
	select {
	case s.work <- run:
	case <-s.quit:
		return nil, errors.New("start: spawner closed")
	}
	r := <-res
	return r.p, r.err
}

// forkChild forks and executes path as c says, with stdin devnull and
// stdout and stderr out, and returns the watched process. It runs on the
// Spawner's thread, whose life the child's parent-death signal follows.
func forkChild(c Cmd, path string, devnull, out *os.File) (*Process, error) {
	pidfd := -1
	attr := &syscall.ProcAttr{
		Dir:   c.Dir,
		Env:   c.Env,
		Files: withFiles([]uintptr{devnull.Fd(), out.Fd(), out.Fd()}, c.Files),
		Sys: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGKILL,
			PidFD:     &pidfd,
			// Groups, then gid, then uid, in the child before exec.
			Credential: c.Cred.sys(),
		},
	}
	// Registered under the lock that the reaper takes to list children,
	// so it never mistakes this child for an orphan.
	registry.Lock()
	defer registry.Unlock()
	pid, err := syscall.ForkExec(path, c.Argv, attr)
	if err != nil {
		return nil, c.startError(err)
	}
	p, err := newProcess(pid, pidfd, c.Marker)
	if err != nil {
		// Without its pidfd the process cannot be watched: kill it and
		// reap it here, so nothing is left behind.
		syscall.Kill(-pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
		return nil, fmt.Errorf("start %s: %w", c.Argv[0], err)
	}
	registry.pids[pid] = true
	return p, nil
}

// startError is the error of a start of c whose fork and exec failed
// with err. A permission denied as another user is its directory or its
// program, which that user cannot reach: it says so.
func (c Cmd) startError(err error) error {
	pe := &os.PathError{Op: "start", Path: c.Argv[0], Err: err}
	if c.Cred == nil || !errors.Is(err, syscall.EACCES) {
		return pe
	}
	return fmt.Errorf("%w, as uid %d: that user must be able to enter its directory %s and every directory above it, and to run its program", pe, c.Cred.Uid, c.Dir)
}

// lookPath finds the program to run as exec.LookPath does, but in the
// child's PATH and relative to the child's directory.
func lookPath(name, dir string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		if err := executable(path); err != nil {
			return "", &os.PathError{Op: "start", Path: name, Err: err}
		}
		return path, nil
	}
	pathEnv, ok := lookupEnv(env, "PATH")
	if !ok {
		pathEnv = os.Getenv("PATH")
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		path := filepath.Join(d, name)
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		if executable(path) == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("start %s: executable file not found in $PATH", name)
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return syscall.EACCES
	}
	return nil
}

func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// sys is c as the spawn takes it; nil for c nil.
func (c *Cred) sys() *syscall.Credential {
	if c == nil {
		return nil
	}
	return &syscall.Credential{Uid: c.Uid, Gid: c.Gid, Groups: c.Groups}
}

// withFiles is std followed by the descriptors of files, which the child
// gets as 3 and on.
func withFiles(std []uintptr, files []*os.File) []uintptr {
	for _, f := range files {
		std = append(std, uintptr(FD(f)))
	}
	return std
}
