//go:build unix

package host

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/output"
	"github.com/graftland/graft/internal/safefs"
)

// ReadyFD is the file descriptor on which a host started by
// StartBackground reports that it listens: it writes "ready\n" to it.
const ReadyFD = 3

// StartBackground starts a host for state dir dir in the background, as
// `exe host --state-dir dir --ready-fd 3 --host-log`, detached in its own
// session, and waits until it listens, at most timeout. The host writes its
// log to host.log in the state dir, rotated (OpenHostLog); until it has
// opened it, its output is appended to host.log. A state dir that cannot be
// trusted is refused first, a *safefs.UnsafeError, so nothing is written
// through a link put there. A host that fails to come up is an error with
// the tail of host.log.
func StartBackground(exe, dir string, timeout time.Duration) error {
	if err := validateStateDir(dir); err != nil {
		return err
	}
	logPath := filepath.Join(dir, hostapi.HostLog)
	log, err := safefs.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	defer log.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(exe, "host", "--state-dir", dir, "--ready-fd", fmt.Sprint(ReadyFD), "--host-log")
	cmd.Args[0] = "graft" // what ps shows, whatever the binary is called
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{w} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("start a host: %w", err)
	}
	// It is not this process's to wait for: it outlives the CLI.
	defer cmd.Process.Release()

	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, 64))
		got <- string(b)
	}()
	select {
	case s := <-got:
		if strings.TrimSpace(s) == "ready" {
			return nil
		}
		return &startError{log: logPath, why: "it exited before it listened"}
	case <-time.After(timeout):
		r.Close() // ends the reader
		<-got
		return &startError{log: logPath, why: fmt.Sprintf("it did not listen within %s", timeout)}
	}
}

// startError is a background host that did not come up.
type startError struct{ log, why string }

func (e *startError) Error() string {
	msg := "start a host in the background: " + e.why
	if tail := tailOf(e.log, 15); tail != "" {
		msg += "; the end of " + e.log + ":\n" + tail
	}
	return msg
}

// tailOf is the last n lines of the log at path, indented, read as
// output.LastOf reads: from the end, a block at a time.
func tailOf(path string, n int) string {
	s, err := output.LastOf(path, output.Options{}, n)
	if err != nil {
		return ""
	}
	defer s.Close()
	lines, err := s.Lines()
	if err != nil || len(lines) == 0 {
		return ""
	}
	return "  " + strings.Join(lines, "\n  ")
}

// redirectStdio points this process's standard output and error at f.
func redirectStdio(f *os.File) {
	fd := int(f.Fd())
	_ = unix.Dup2(fd, 1)
	_ = unix.Dup2(fd, 2)
}
