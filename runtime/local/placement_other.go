//go:build !linux

package local

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/runtime"
)

// Local is the placement of plugins that run as child processes of the
// host. Off Linux it starts nothing yet: graft's guarantees about process
// families rest on pidfds, /proc and the child subreaper.
type Local struct {
	opt      Options
	sockets  socketTable
	claimErr error
}

var _ runtime.Placement = (*Local)(nil)

// New returns a Local placement.
func New(opt Options) *Local { return &Local{opt: opt} }

// start fails with proc.ErrUnsupported.
func (l *Local) start(ctx context.Context, req runtime.Request) (runtime.Handle, error) {
	return nil, fmt.Errorf("start %s: %w", req.Name, proc.ErrUnsupported)
}

// Isolation reports that processes are not supported.
func (l *Local) Isolation() proc.Isolation { return proc.Isolation{Err: proc.ErrUnsupported} }

// Close does nothing.
func (l *Local) Close() error { return nil }

// Attach finds nothing off Linux.
func (l *Local) Attach(*slog.Logger) ([]Kept, error) { return nil, nil }

// Adopt fails off Linux.
func (l *Local) Adopt(context.Context, runtime.Request, Kept) (runtime.Handle, error) {
	return nil, proc.ErrUnsupported
}

// StopHeld does nothing off Linux.
func StopHeld(proc.Held) {}

// Hold fails off Linux.
func (l *Local) Hold(time.Duration) error { return proc.ErrUnsupported }

// Unhold does nothing off Linux.
func (l *Local) Unhold(time.Duration) {}

// Freeze does nothing off Linux.
func (l *Local) Freeze() {}

// Thaw does nothing off Linux.
func (l *Local) Thaw() {}
