package runner

import (
	"context"
	"sync"
	"time"

	"github.com/graftland/graft/runnerapi"
)

// session is one holder's lease on the processes it starts. The runner's
// mu guards its fields but mu's own.
type session struct {
	id     string
	holder string
	lease  time.Duration

	expires time.Time
	timer   *time.Timer // runs out the lease: Runner.expire
	ended   bool        // the lease ran out or the session was ended
	procs   map[*process]bool
	// sockets are the keys of the sockets held for its instances ahead
	// of their starts (holdSockets), released with it as its processes'.
	sockets map[string]bool
	// starts counts the starts under way under the session, and late
	// lists the processes they stopped because it ended meanwhile: its
	// end answers once they are done.
	starts sync.WaitGroup
	late   []runnerapi.Stopped

	// ctx ends with the session: starts under it still under way stop.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	stream *stream // the event stream connected; nil when none
	// parked holds the events sent while no stream is connected, for the
	// next one: a holder whose stream broke, or that follows it again
	// after its own restart or the runner's, misses none of them (within
	// maxQueued).
	parked *stream
	closed bool // no stream connects any more
}

// send queues ev on the session's stream, or for the next one.
func (s *session) send(ev runnerapi.Event) {
	s.mu.Lock()
	st := s.stream
	if st == nil && !s.closed {
		if s.parked == nil {
			s.parked = newStream()
		}
		st = s.parked
	}
	s.mu.Unlock()
	if st != nil {
		st.push(ev)
	}
}

// connect makes st the session's stream, ending the one it replaces, and
// gives it what was queued meanwhile. It reports false when the session
// is over.
func (s *session) connect(st *stream) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.stream != nil {
		s.stream.end()
		st.takeOver(s.stream)
	}
	if s.parked != nil {
		st.takeOver(s.parked)
		s.parked = nil
	}
	s.stream = st
	return true
}

// disconnect forgets st if it is still the session's stream; what it had
// yet to send waits for the next.
func (s *session) disconnect(st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stream == st {
		s.stream = nil
		if !s.closed {
			s.parked = newStream()
			s.parked.takeOver(st)
		}
	}
}

// close ends the stream, and refuses any other.
func (s *session) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.parked = nil
	if s.stream != nil {
		s.stream.end()
		s.stream = nil
	}
}

// drained reports whether every event queued for the session has been
// written to its stream's connection (none when no stream is connected).
func (s *session) drained() bool {
	s.mu.Lock()
	st := s.stream
	s.mu.Unlock()
	return st == nil || st.empty()
}

// maxQueued bounds the output lines and health results queued for a
// stream, or for the next one: a client that reads slower than its
// plugins write, or none, loses them rather than slowing the plugins
// down. Exits are always queued.
const maxQueued = 4096

// stream is the queue of one connected event stream.
type stream struct {
	mu      sync.Mutex
	queue   []runnerapi.Event
	outputs int  // output and health events in queue
	busy    bool // events taken are being written

	wake    chan struct{} // has a value when queue may have grown
	done    chan struct{} // closed when replaced or the session ended
	endOnce sync.Once
}

func newStream() *stream {
	return &stream{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (st *stream) push(ev runnerapi.Event) {
	st.mu.Lock()
	if ev.Type != runnerapi.EventExit {
		if st.outputs >= maxQueued {
			st.mu.Unlock()
			return
		}
		st.outputs++
	}
	st.queue = append(st.queue, ev)
	st.mu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// take empties the queue: the events are being written until the next
// take (or written).
func (st *stream) take() []runnerapi.Event {
	st.mu.Lock()
	defer st.mu.Unlock()
	q := st.queue
	st.queue, st.outputs = nil, 0
	st.busy = len(q) > 0
	return q
}

// written says the events taken last are written and flushed.
func (st *stream) written() {
	st.mu.Lock()
	st.busy = false
	st.mu.Unlock()
}

// empty reports whether nothing is queued or being written.
func (st *stream) empty() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.queue) == 0 && !st.busy
}

// takeOver moves what old still queues in front of st's queue.
func (st *stream) takeOver(old *stream) {
	q := old.take()
	old.written()
	if len(q) == 0 {
		return
	}
	st.mu.Lock()
	st.queue = append(q, st.queue...)
	st.outputs = 0
	for _, ev := range st.queue {
		if ev.Type != runnerapi.EventExit {
			st.outputs++
		}
	}
	st.mu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

func (st *stream) end() { st.endOnce.Do(func() { close(st.done) }) }
