package elect

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hang is a share that, once closed, blocks the operations named in ops
// (all, when none is named) until it is opened again: the Fault seam
// stands in for an NFS server that went away, which this machine lacks.
type hang struct {
	mu   sync.Mutex
	ops  map[string]bool
	shut chan struct{} // nil while the share answers
}

func (h *hang) fault(op string) error {
	h.mu.Lock()
	shut, ops := h.shut, h.ops
	h.mu.Unlock()
	if shut != nil && (len(ops) == 0 || ops[op]) {
		<-shut
	}
	return nil
}

func (h *hang) close(ops ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.shut, h.ops = make(chan struct{}), map[string]bool{}
	for _, op := range ops {
		h.ops[op] = true
	}
}

func (h *hang) open() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shut != nil {
		close(h.shut)
		h.shut = nil
	}
}

// realHost is an election on real time with short durations, its share
// behind h.
func realHost(t *testing.T, dir string, h *hang) *Election {
	e, err := New(Config{Dir: dir, Instance: instance, HostID: "S001", Address: "127.0.0.1:1",
		TTL: time.Second, Renew: 100 * time.Millisecond, Poll: 50 * time.Millisecond, Fault: h.fault})
	require.NoError(t, err)
	t.Cleanup(e.Close)
	t.Cleanup(h.open) // first: nothing waits on the share at Close
	return e
}

// TestHungWriteLosesTheTerm: a renewal whose write hangs is given up on
// when the next renewal is due, 2 × renew after the last one began; the
// write, released later, is not renamed over the lease.
func TestHungWriteLosesTheTerm(t *testing.T) {
	h := &hang{}
	e := realHost(t, t.TempDir(), h)
	term, err := e.Campaign(context.Background())
	require.NoError(t, err)
	h.close("write lease")
	time.Sleep(20 * time.Millisecond) // a write already past the fault lands
	before, _, err := Read(e.cfg.Dir, instance)
	require.NoError(t, err)
	renewed := term.Renewed()
	recv(t, term.Lost())
	took := time.Since(renewed)
	t.Logf("term lost %s after the last renewal began (2 × renew = %s)", took, 2*e.cfg.Renew)
	assert.ErrorIs(t, term.Err(), ErrHung)
	assert.GreaterOrEqual(t, took, e.cfg.Renew)
	assert.Less(t, took, 2*e.cfg.Renew+300*time.Millisecond, "given up when the next renewal was due")
	assert.Equal(t, renewed.Add(e.cfg.TTL), term.Deadline())

	h.open()
	time.Sleep(50 * time.Millisecond) // the released write goes on
	after, _, err := Read(e.cfg.Dir, instance)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the write given up on was not renamed")
}

// TestHungShareBoundsWaiters: reads of a share that hangs each give up
// after renew, and past 4 waiting on it, fail at once.
func TestHungShareBoundsWaiters(t *testing.T) {
	h := &hang{}
	e := realHost(t, t.TempDir(), h)
	h.close()
	for i := range maxPending {
		began := time.Now()
		_, _, err := e.Leader(context.Background())
		assert.ErrorIs(t, err, ErrHung, "read %d", i)
		assert.GreaterOrEqual(t, time.Since(began), e.cfg.Renew-10*time.Millisecond, "read %d waited its deadline", i)
	}
	began := time.Now()
	_, _, err := e.Leader(context.Background())
	assert.ErrorIs(t, err, ErrHung)
	assert.Less(t, time.Since(began), e.cfg.Renew/2, "at once, with %d waiting", maxPending)
	h.open()
	require.Eventually(t, func() bool { _, _, err := e.Leader(context.Background()); return !errors.Is(err, ErrHung) },
		5*time.Second, 10*time.Millisecond, "the share answers again")
}

// TestStopBudget: New refuses a ttl that cannot hold 2 × renew and the
// stop budget, naming what to change.
func TestStopBudget(t *testing.T) {
	_, err := New(Config{Dir: t.TempDir(), Instance: instance, HostID: "S001", Address: "a:1",
		TTL: 10 * time.Second, Renew: 3 * time.Second, StopBudget: 7 * time.Second})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "TTL", ce.Field)
	assert.Contains(t, ce.Reason, "longer than 13s")
	assert.Equal(t, 13*time.Second, MinTTL(3*time.Second, 7*time.Second))
	e, err := New(Config{Dir: t.TempDir(), Instance: instance, HostID: "S001", Address: "a:1",
		TTL: 15 * time.Second, Renew: 3 * time.Second, StopBudget: 7 * time.Second})
	require.NoError(t, err)
	e.Close()
}
