package runner

import (
	"os"
	"sync"

	"github.com/graftland/graft/internal/atomicfile"
)

// The journal's appends are committed in groups, as a database commits
// its log (docs/runner-api.md, "The state dir"). Each start appends its
// entry, then waits for a sync of the journal that began after its
// append: the first waiter syncs for itself and for whoever queued behind
// it meanwhile, and whoever queues while it syncs goes in the next group,
// led by the first of them. Nothing waits for a group to fill: a lone
// start syncs at once.

// committer groups the syncs of its waiters.
type committer struct {
	mu      sync.Mutex
	queue   []*syncWait // waiting for the next group
	leading bool        // a group is under way
}

// syncWait is one waiter for a sync.
type syncWait struct {
	err error // how its group's sync went, when done
	// lead is set, before wake is closed, when the waiter is to lead the
	// next group rather than being done.
	lead bool
	wake chan struct{}
}

// sync returns once a call of do that began after sync was called has
// returned, with its error: do runs once for each group of waiters.
func (c *committer) sync(do func() error) error {
	me := &syncWait{wake: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, me)
	if c.leading {
		c.mu.Unlock()
		<-me.wake
		if !me.lead {
			return me.err
		}
		c.mu.Lock()
	}
	c.leading = true
	group := c.queue
	c.queue = nil
	c.mu.Unlock()

	err := do()

	c.mu.Lock()
	for _, w := range group {
		w.err = err
		if w != me {
			close(w.wake)
		}
	}
	if len(c.queue) > 0 {
		next := c.queue[0]
		next.lead = true
		close(next.wake)
	} else {
		c.leading = false
	}
	c.mu.Unlock()
	return err
}

// syncFile makes what was written to f durable: its data, and its size
// (fdatasync). It is a variable so that a test can fail it, which a real
// disk does not do on demand.
var syncFile = func(f *os.File) error {
	if err := datasync(f); err != nil {
		return &os.PathError{Op: "sync", Path: f.Name(), Err: atomicfile.Cause(err)}
	}
	return nil
}

// syncDir makes the renames in a directory durable. It is a variable so
// that a test can fail it.
var syncDir = atomicfile.SyncDir
