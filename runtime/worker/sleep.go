package worker

import (
	"context"
	"time"

	"github.com/tetratelabs/wazero/sys"
)

// nanosleep is a module's clock: WASI's poll_oneoff, with which modules
// sleep (Go's time.Sleep, Rust's thread::sleep), waits through it for its
// clock subscriptions, and wazero's own sleeps it with time.Sleep, which
// no close of the module ends. This one ends when the module's context
// does, so a module closed while it sleeps returns at once: wazero sees
// the module closed at its next call and ends it.
//
// poll_oneoff's other wait, on stdin, ends when stdin does, and a stop
// closes stdin before anything else (see module.stopInOrder).
func nanosleep(ctx context.Context) sys.Nanosleep {
	return func(ns int64) {
		if ns <= 0 {
			return
		}
		t := time.NewTimer(time.Duration(ns))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}
