package elect

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrHung: an operation on the share did not finish by its deadline (an
// NFS or SMB server that does not answer), or too many earlier ones still
// wait for it. The election gives up on it; the leader of a term stops its
// plugin (docs/semantics.md, "Floating plugins: the election").
var ErrHung = errors.New("the share did not answer in time")

// ErrLate: the leader's renewal began only after the next one was due,
// as after its host was frozen (SIGSTOP, a paused VM): the term is lost
// without touching the share.
var ErrLate = errors.New("renewal too late")

// maxPending bounds the operations left waiting on a share that hangs: a
// blocked system call holds a thread, and an election that started one at
// every poll would pile them up for as long as the share hangs. Past it,
// operations fail at once with ErrHung.
const maxPending = 4

// do runs op's I/O f on a goroutine of its own and waits for it until
// deadline, on real time: a blocked read or write cannot be interrupted,
// but the caller can give up on it. f is told, through abandoned, whether
// its caller has given up, so that it takes no further step that others
// would see (a rename, a lock), and undoes what it can. The goroutine ends
// when the share answers; Close does not wait for it.
//
// The deadline is set on the election's clock and waited for in real time,
// so a test's fake clock, which only moves when told, schedules the
// election but never hangs it.
func (e *Election) do(op string, deadline time.Time, f func(abandoned func() bool) error) error {
	_, err := doValue(e, op, deadline, func(abandoned func() bool) (struct{}, error) { return struct{}{}, f(abandoned) })
	return err
}

// outcome is what an operation on the share returned.
type outcome[T any] struct {
	v   T
	err error
}

// doValue is do for an operation that returns a value. The value travels
// on a channel: a goroutine given up on must not write where its caller
// reads.
func doValue[T any](e *Election, op string, deadline time.Time, f func(abandoned func() bool) (T, error)) (T, error) {
	var zero T
	wait := deadline.Sub(e.cfg.Clock.Now())
	if wait <= 0 {
		return zero, fmt.Errorf("%s: %w: its deadline had passed", op, ErrHung)
	}
	select {
	case e.pending <- struct{}{}:
	default:
		return zero, fmt.Errorf("%s: %w: %d earlier operations still wait for it", op, ErrHung, maxPending)
	}
	var gone atomic.Bool
	done := make(chan outcome[T], 1)
	go func() {
		defer func() { <-e.pending }()
		if e.cfg.Fault != nil {
			if err := e.cfg.Fault(op); err != nil {
				done <- outcome[T]{err: fmt.Errorf("%s: %w", op, err)}
				return
			}
		}
		v, err := f(gone.Load)
		done <- outcome[T]{v, err}
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case r := <-done:
		return r.v, r.err
	case <-t.C:
		gone.Store(true)
		return zero, fmt.Errorf("%s: %w (within %s)", op, ErrHung, wait.Round(time.Millisecond))
	}
}

// ioDeadline is the deadline of an operation that is not part of a
// renewal: one renew from now. A look or a contention that takes longer
// is tried again at the next poll.
func (e *Election) ioDeadline() time.Time { return e.cfg.Clock.Now().Add(e.cfg.Renew) }
