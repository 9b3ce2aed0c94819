package output

import "fmt"

// followBuffer is how many live lines a follower may lag behind before
// lines are dropped for it.
const followBuffer = 1024

// Follower receives a Log's lines as they are written, for `graft logs -f`.
// Its buffer is its channel, so no goroutine delivers to it and nothing
// already queued is lost when the Log closes.
type Follower struct {
	log     *Log
	ch      chan string
	dropped int  // lines lost since the last notice; guarded by log.mu
	ended   bool // guarded by log.mu
}

// Follow returns a Follower that receives every line written from now on,
// and the Section of the files holding the last n lines before them (as
// Last counts them), to be written out first: with no gap and no
// duplicate, as both are taken under the lock Write holds. An unfinished
// last line is left out of the backlog and arrives live once it ends, so
// it is not sent twice. The backlog is read from the files when written
// out, so its memory is bounded however large n is; the caller closes it.
// On a closed Log the Follower's channel is closed at once.
func (l *Log) Follow(n int) (backlog *Section, f *Follower, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	backlog, err = l.last(n, true)
	if err != nil {
		return nil, nil, fmt.Errorf("read log back: %w", err)
	}
	// The slot past the live buffer is kept for the notice of dropped
	// lines, so that end can always deliver it without blocking.
	f = &Follower{log: l, ch: make(chan string, followBuffer+1)}
	if l.closed {
		f.ended = true
		close(f.ch)
		return backlog, f, nil
	}
	l.followers[f] = struct{}{}
	return backlog, f, nil
}

// Lines delivers the lines; it is closed when the Follower or the Log closes.
func (f *Follower) Lines() <-chan string { return f.ch }

// Close stops the delivery and closes Lines. It is idempotent.
func (f *Follower) Close() {
	f.log.mu.Lock()
	defer f.log.mu.Unlock()
	f.log.end(f)
}

// send queues line without ever blocking Write. When the buffer is full the
// line is counted as dropped; the count goes out as one notice just before
// the next line that fits, or when the follower ends.
func (f *Follower) send(line string) {
	need := 1
	if f.dropped > 0 {
		need = 2 // the notice and the line
	}
	// Only Write adds to ch, under log.mu, so free can only grow meanwhile.
	if free := cap(f.ch) - 1 - len(f.ch); free < need {
		f.dropped++
		return
	}
	if f.dropped > 0 {
		f.ch <- dropNotice(f.dropped)
		f.dropped = 0
	}
	f.ch <- line
}

func dropNotice(n int) string { return fmt.Sprintf("[graft: %d lines dropped]", n) }

// end closes f's channel after a pending drop notice, which fits in the
// reserved slot. l.mu must be held.
func (l *Log) end(f *Follower) {
	if f.ended {
		return
	}
	f.ended = true
	delete(l.followers, f)
	if f.dropped > 0 {
		f.ch <- dropNotice(f.dropped)
		f.dropped = 0
	}
	close(f.ch)
}
