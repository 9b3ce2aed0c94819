package elect

import (
	"sync"
	"testing"
	"time"
)

// fakeClock runs only when a test advances it. A test waits until every
// goroutine it expects is parked on a timer (waitTimers), then advances:
// events are ordered by the clock, not by sleeps.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  map[*fakeTimer]struct{}
	changed chan struct{} // closed and replaced whenever timers change
}

// newFakeClock starts near the real wall time, so a host shifted from it
// is wrong by that much against the files' mtimes.
func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Now().Round(0), timers: map[*fakeTimer]struct{}{}, changed: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1), at: c.now.Add(d)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.timers[t] = struct{}{}
	c.signal()
	return t
}

func (c *fakeClock) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Advance moves the clock and fires the timers due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for t := range c.timers {
		if !t.at.After(c.now) {
			t.ch <- c.now
			delete(c.timers, t)
		}
	}
	c.signal()
}

// waitTimers waits until exactly n timers are pending. The real-time limit
// only turns a hang into a failure.
func (c *fakeClock) waitTimers(t testing.TB, n int) {
	t.Helper()
	limit := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		k, ch := len(c.timers), c.changed
		c.mu.Unlock()
		if k == n {
			return
		}
		select {
		case <-ch:
		case <-limit:
			t.Fatalf("waiting for %d pending timers, have %d", n, k)
		}
	}
}

// step waits for n parked goroutines, then advances by d.
func (c *fakeClock) step(t testing.TB, n int, d time.Duration) {
	t.Helper()
	c.waitTimers(t, n)
	c.Advance(d)
}

type fakeTimer struct {
	c  *fakeClock
	ch chan time.Time
	at time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, ok := t.c.timers[t]
	if ok {
		delete(t.c.timers, t)
		t.c.signal()
	}
	return ok
}

// shifted is a host whose wall clock is off by off; its timers are the
// shared fake clock's.
type shifted struct {
	*fakeClock
	off time.Duration
}

func (s shifted) Now() time.Time { return s.fakeClock.Now().Add(s.off) }
