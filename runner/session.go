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
	closed bool    // no stream connects any more
}

// send queues ev on the session's stream; without one it is dropped.
func (s *session) send(ev runnerapi.Event) {
	s.mu.Lock()
	st := s.stream
	s.mu.Unlock()
	if st != nil {
		st.push(ev)
	}
}

// connect makes st the session's stream, ending the one it replaces. It
// reports false when the session is over.
func (s *session) connect(st *stream) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.stream != nil {
		s.stream.end()
	}
	s.stream = st
	return true
}

// disconnect forgets st if it is still the session's stream.
func (s *session) disconnect(st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stream == st {
		s.stream = nil
	}
}

// close ends the stream, and refuses any other.
func (s *session) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.stream != nil {
		s.stream.end()
		s.stream = nil
	}
}

// maxQueued bounds the output lines queued for a stream: a client that
// reads slower than its plugins write loses lines rather than slowing
// them down. Exits are always queued.
const maxQueued = 4096

// stream is the queue of one connected event stream.
type stream struct {
	mu      sync.Mutex
	queue   []runnerapi.Event
	outputs int // output events in queue

	wake    chan struct{} // has a value when queue may have grown
	done    chan struct{} // closed when replaced or the session ended
	endOnce sync.Once
}

func newStream() *stream {
	return &stream{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (st *stream) push(ev runnerapi.Event) {
	st.mu.Lock()
	if ev.Type == runnerapi.EventOutput {
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

// take empties the queue.
func (st *stream) take() []runnerapi.Event {
	st.mu.Lock()
	defer st.mu.Unlock()
	q := st.queue
	st.queue, st.outputs = nil, 0
	return q
}

func (st *stream) end() { st.endOnce.Do(func() { close(st.done) }) }
