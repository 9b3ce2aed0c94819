package host

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

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

// watchSettle gathers the changes of a moment into one status: an apply
// changes a plugin several times in a few milliseconds. A status is sent
// at most once a moment.
const watchSettle = 20 * time.Millisecond

// serveWatch is GET /v1/status?watch=1: the status now, then again after
// every change that shows in it, one JSON object a line, flushed as it
// comes, until the client goes or the host ends. It is driven by the
// host's changes, never by a clock: a host that changes nothing sends
// nothing.
func (h *Host) serveWatch(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	var last []byte
	for {
		next := h.changed.wait() // before the status is read, so no change is missed
		b, err := json.Marshal(h.Status())
		if err != nil {
			return
		}
		if !bytes.Equal(b, last) {
			if _, err := w.Write(append(b, '\n')); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			last = b
		}
		// The first change after a quiet moment is sent at once (an apply's
		// taking of the lock, which a short apply would otherwise end
		// within the moment); what follows it within watchSettle is
		// gathered into the next status.
		select {
		case <-time.After(watchSettle):
		case <-r.Context().Done():
			return
		}
		select {
		case <-next:
		case <-r.Context().Done():
			return
		case <-h.down:
			return
		}
	}
}
