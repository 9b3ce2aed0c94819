package floating

import "sync"

// queue passes changes of leader from the elections to the one reader of
// out without ever making an election wait: what the reader has not taken
// yet waits here, one change per plugin, the last.
type queue struct {
	out chan Change

	mu      sync.Mutex
	pending []Change
	wake    chan struct{} // signalled when pending grows
	closed  chan struct{}
	done    chan struct{} // closed when the pump has returned
	once    sync.Once
}

func newQueue() *queue {
	q := &queue{out: make(chan Change), wake: make(chan struct{}, 1), closed: make(chan struct{}), done: make(chan struct{})}
	go q.pump()
	return q
}

// publish adds c, replacing a change of the same plugin not yet taken.
func (q *queue) publish(c Change) {
	q.mu.Lock()
	replaced := false
	for i := range q.pending {
		if q.pending[i].Plugin == c.Plugin {
			q.pending[i], replaced = c, true
		}
	}
	if !replaced {
		q.pending = append(q.pending, c)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pump hands the pending changes to the reader, oldest first, until
// close; then it closes out.
func (q *queue) pump() {
	defer close(q.done)
	defer close(q.out)
	for {
		q.mu.Lock()
		var next Change
		have := len(q.pending) > 0
		if have {
			next = q.pending[0]
		}
		q.mu.Unlock()
		var out chan Change
		if have {
			out = q.out
		}
		select {
		case out <- next:
			q.mu.Lock()
			if q.pending[0] == next { // else a newer change of its plugin replaced it: send that too
				q.pending = q.pending[1:]
			}
			q.mu.Unlock()
		case <-q.wake:
		case <-q.closed:
			return
		}
	}
}

// close ends the pump, dropping what is pending, and waits for it.
func (q *queue) close() {
	q.once.Do(func() { close(q.closed) })
	<-q.done
}
