package host

import "sync"

// changes tells those who watch a host's status that it changed: a
// plugin's status, error or restarts (runtime.Supervisor.OnChange), a
// plugin started or forgotten, a stop's outcome, the apply lock taken or
// released, the applied spec, a floating plugin's leader. Each wait gets
// a channel that the next change closes, so any number of watchers wait
// without a goroutine of their own, and a change never waits for one.
type changes struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns a channel closed at the next change.
func (c *changes) wait() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

// notify tells every waiter of a change.
func (c *changes) notify() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
}

// Changes returns a channel closed at the host's next change that shows
// in its status (see changes): who watches the status reads it again
// then, and asks again.
func (h *Host) Changes() <-chan struct{} { return h.changed.wait() }
