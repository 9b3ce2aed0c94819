// Package proc owns the child processes of this process: it starts them on
// a thread that outlives them, watches them without polling, signals them
// with everything they forked, and reaps what this process adopts.
package proc

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// Cmd is a process to start.
type Cmd struct {
	// Argv is the program and its arguments. A program name without a
	// slash is looked up in the PATH of Env (else of this process); one
	// with a slash is relative to Dir.
	Argv []string
	// Dir is the working directory.
	Dir string
	// Env is the whole environment, as KEY=VALUE.
	Env []string
	// Output receives stdout and stderr; nil is /dev/null.
	Output *os.File
	// Marker is a KEY=VALUE of Env that identifies the process's family:
	// a descendant that left the process group, and was adopted by this
	// process, is recognised by it in its environment.
	Marker string
	// Isolate starts the process in the Spawner's PID namespace, as a
	// child of its small init, when the Spawner can make one (see
	// Spawner.Isolation): then nothing of its family outlives this
	// process, the daemons it double-forks included. Where the Spawner
	// cannot, it starts as without Isolate.
	Isolate bool
	// Cred, when set, is who the process runs as: its uid, gid and
	// supplementary groups, which only a root process can give. The
	// child takes them on between its fork and its exec.
	Cred *Cred
	// Umask, when set, is the process's umask; Limits are resource
	// limits it starts with. Either makes the child this program run
	// again as a small setup (setup_linux.go), which sets them, then
	// Cred, then executes the program.
	Umask  *uint32
	Limits []Limit

	// What the init of the Spawner's namespace keeps of an isolated
	// process for the next host, once this one is gone (see
	// Spawner.SetHandover): Reader, the read end of Output's pipe, which
	// it holds so that the output waits in the pipe; Tag, which it gives
	// the next host with the process; Hold, whether it keeps the process
	// at all (else it stops it as soon as this process is gone); and the
	// signal and timeout of the stop it makes when no host comes.
	Reader      *os.File
	Tag         string
	Hold        bool
	StopSignal  syscall.Signal
	StopTimeout time.Duration

	// Files are given to the process as descriptors 3 and on, in order:
	// the sockets held for it (socket activation). With Files, an Env that
	// sets LISTEN_FDS makes the child start through the setup, which sets
	// LISTEN_PID to the program's own pid, as systemd does. At most
	// MaxFiles.
	Files []*os.File
}

// MaxFiles bounds Cmd.Files.
const MaxFiles = 64

// Limit is a resource limit: an RLIMIT_ number, with its soft and hard
// values (RLIM_INFINITY: unlimited).
type Limit struct {
	Resource   int
	Soft, Hard uint64
}

// Cred is who a process runs as.
type Cred struct {
	Uid, Gid uint32
	// Groups are the supplementary groups.
	Groups []uint32
}

// Status is how a process ended.
type Status struct {
	// Code is the exit status, or -1 when a signal ended it.
	Code int
	// Signal is the signal that ended it, or 0.
	Signal syscall.Signal
}

// ErrUnsupported is returned on platforms where graft cannot yet run
// local processes with the guarantees it promises.
var ErrUnsupported = errors.New("local processes are supported on Linux only")
