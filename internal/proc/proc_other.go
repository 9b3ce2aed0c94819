//go:build !linux

package proc

import (
	"os/exec"
	"syscall"
	"time"
)

// Spawner is unsupported off Linux: graft's guarantees about process
// families rest on pidfds, /proc and the child subreaper.
type Spawner struct{}

// NewSpawner returns a Spawner whose Start fails with ErrUnsupported.
func NewSpawner() *Spawner { return &Spawner{} }

// Close does nothing.
func (s *Spawner) Close() {}

// Start fails with ErrUnsupported.
func (s *Spawner) Start(c Cmd) (*Process, error) { return nil, ErrUnsupported }

// Isolation reports that no namespace can be made off Linux.
func (s *Spawner) Isolation() Isolation { return Isolation{Err: ErrUnsupported} }

// Process is a started child; none exist off Linux.
type Process struct{ Pid int }

// Isolated is false off Linux.
func (p *Process) Isolated() bool { return false }

// Reaper is unsupported off Linux.
type Reaper struct{}

// StartReaper fails with ErrUnsupported.
func StartReaper() (*Reaper, error) { return nil, ErrUnsupported }

// Stop does nothing.
func (r *Reaper) Stop() {}

// Member is a process of a family; none are found off Linux.
type Member struct{ Pid int }

// Marked finds nothing off Linux.
func Marked(kvs []string) ([]Member, error) { return nil, ErrUnsupported }

// MarkedBy finds nothing off Linux.
func MarkedBy(kvs []string) (map[string][]Member, error) { return nil, ErrUnsupported }

// Signal does nothing.
func (m Member) Signal(sig syscall.Signal) error { return nil }

// WaitMembers returns true.
func WaitMembers(members []Member, stop <-chan struct{}) bool { return true }

// StartTime fails off Linux.
func StartTime(pid int) (uint64, error) { return 0, ErrUnsupported }

// BootID fails off Linux.
func BootID() (string, error) { return "", ErrUnsupported }

// Lookup finds nothing off Linux.
func Lookup(pid int, start uint64) (Member, bool) { return Member{}, false }

// SetHandover does nothing off Linux.
func (s *Spawner) SetHandover(h Handover, window time.Duration) {}

// Hold fails off Linux.
func (s *Spawner) Hold(window time.Duration, all bool) error { return ErrUnsupported }

// Attach finds nothing off Linux.
func (s *Spawner) Attach() ([]Held, error) { return nil, nil }

// EndNamespaces does nothing off Linux.
func EndNamespaces() {}

// Run runs cmd: there is no Reaper to keep it from.
func Run(cmd *exec.Cmd) error { return cmd.Run() }
