// Package group runs goroutines an owner waits for when it closes, and
// refuses new ones from then on: what an election does with its renewals
// and observers.
package group

import "sync"

// Group is a set of goroutines. Its zero value is ready to use.
type Group struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Go runs f on a goroutine of the group, or returns false, running
// nothing, once Close has begun.
func (g *Group) Go(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f()
	}()
	return true
}

// Close refuses new goroutines, calls stop (which ends those running: a
// cancelled context, a closed client) and waits for them.
func (g *Group) Close(stop func()) {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	stop()
	g.wg.Wait()
}
