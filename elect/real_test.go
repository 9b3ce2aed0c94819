package elect

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRealClock runs three hosts on real time, short durations and real
// TCP probes: a cold start, a resignation, then a crash.
func TestRealClock(t *testing.T) {
	// A ttl of 1.5 s leaves a leader four renewals of room: under the
	// race detector, on two cores busy with the rest of the suite, a
	// renewal can come half a second late, and a leader that missed its
	// ttl is rightly taken over (an epoch the test does not expect).
	const (
		ttl   = 1500 * time.Millisecond
		renew = 300 * time.Millisecond
		poll  = 100 * time.Millisecond
	)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	type won struct {
		host int
		result
	}
	results := make(chan won, 3)
	hosts := make([]*Election, 3)
	for i := range hosts {
		// The plugin's address answers; the kernel completes the connect
		// without an Accept.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { ln.Close() })
		e, err := New(Config{Dir: dir, Instance: instance, HostID: fmt.Sprintf("S%03d", i+1),
			Address: ln.Addr().String(), TTL: ttl, Renew: renew, Poll: poll})
		require.NoError(t, err)
		t.Cleanup(e.Close)
		hosts[i] = e
		go func() {
			term, err := e.Campaign(ctx)
			results <- won{i, result{term, err}}
		}()
	}

	first := recv(t, results)
	require.NoError(t, first.err)
	require.Equal(t, int64(1), first.term.Epoch())
	var watches []*watch
	for i, e := range hosts {
		if i != first.host {
			w := observe(ctx, e)
			w.waitFor(t, epochIs(1))
			watches = append(watches, w)
		}
	}

	start := time.Now()
	require.NoError(t, first.term.Resign(ctx))
	second := recv(t, results)
	require.NoError(t, second.err)
	assert.Equal(t, int64(2), second.term.Epoch())
	assert.Less(t, time.Since(start), ttl, "a release is taken over within a poll, not a ttl")
	for _, w := range watches {
		w.waitFor(t, epochIs(2))
	}

	start = time.Now()
	second.term.Close()
	third := recv(t, results)
	require.NoError(t, third.err)
	assert.Equal(t, int64(3), third.term.Epoch())
	took := time.Since(start)
	assert.Greater(t, took, ttl-renew-poll, "a crash is taken over once the file froze for ttl")
	assert.Less(t, took, ttl+2*time.Second)
	l, _, err := hosts[third.host].Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, hosts[third.host].cfg.HostID, l.Holder)

	cancel()
	for _, w := range watches {
		recv(t, w.done)
	}
}
