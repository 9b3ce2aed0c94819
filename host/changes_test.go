package host

import (
	"testing"
)

// TestChangesWakeEveryWaiter: a change closes the channel every waiter
// got, and a later wait gets a new one, open until the next change.
func TestChangesWakeEveryWaiter(t *testing.T) {
	var c changes
	a, b := c.wait(), c.wait()
	c.notify()
	for _, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		default:
			t.Fatal("a waiter was not woken")
		}
	}
	next := c.wait()
	select {
	case <-next:
		t.Fatal("a wait after the change is woken before the next one")
	default:
	}
	c.notify()
	<-next
}
