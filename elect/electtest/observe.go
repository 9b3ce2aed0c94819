package electtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/graftland/graft/elect"
)

// testObserve: a host that only observes sees the first leader, then,
// after it resigns, the second, in order, with their holders and
// epochs; its channel closes when its context ends.
func testObserve(t *testing.T, kit Kit) {
	bs, _ := hosts(t, kit, 3)
	ctx := t.Context()
	octx, stop := context.WithCancel(ctx)
	obs := bs["h3"].Observe(octx)
	ch := make(chan won, 2)
	campaign(ctx, "h1", bs["h1"], ch)
	a := recv(t, ch, kit.TTL+slack)
	seen := awaitLeader(t, obs, "h1", a.term.Epoch(), kit.TTL+slack)
	campaign(ctx, "h2", bs["h2"], ch)
	require.Eventually(t, bs["h2"].Following, slack, 10*time.Millisecond)
	require.NoError(t, a.term.Resign(ctx))
	b := recv(t, ch, kit.Handover+slack)
	seen = append(seen, awaitLeader(t, obs, "h2", b.term.Epoch(), kit.Handover+slack)...)
	var epochs []int64
	for _, o := range seen {
		if !o.Dead {
			epochs = append(epochs, o.Lease.Epoch)
		}
	}
	assert.Equal(t, []int64{a.term.Epoch(), b.term.Epoch()}, epochs, "each leader once, in order: %+v", seen)
	stop()
	for range obs {
	}
	b.term.Close()
}

// awaitLeader reads obs until it shows holder leading epoch, and returns
// what it read.
func awaitLeader(t *testing.T, obs <-chan elect.Observation, holder string, epoch int64, d time.Duration) []elect.Observation {
	t.Helper()
	timeout := time.After(d)
	var seen []elect.Observation
	for {
		select {
		case o, ok := <-obs:
			require.True(t, ok, "the observer stopped")
			seen = append(seen, o)
			if !o.Dead && o.Lease.Holder == holder && o.Lease.Epoch == epoch {
				assert.NotEmpty(t, o.Lease.Address)
				return seen
			}
		case <-timeout:
			t.Fatalf("no observation of %s leading epoch %d within %s; saw %+v", holder, epoch, d, seen)
		}
	}
}

// testClose: a closed election stops every goroutine it started (a term's
// renewal, an observer, a campaign in line), fails a campaign with
// ErrClosed, and closes an observer's channel.
func testClose(t *testing.T, kit Kit) {
	before := goleak.IgnoreCurrent()
	join := kit.Election(t)
	a, b := join("h1"), join("h2")
	ch := make(chan won, 2)
	ctx := t.Context()
	campaign(ctx, "h1", a, ch)
	w := recv(t, ch, kit.TTL+slack)
	campaign(ctx, "h2", b, ch)
	obs := b.Observe(ctx)
	require.Eventually(t, b.Following, slack, 10*time.Millisecond)
	b.Close()
	select {
	case w := <-ch:
		assert.ErrorIs(t, w.err, elect.ErrClosed)
	case <-time.After(slack):
		t.Fatal("a campaign in line did not end at Close")
	}
	for range obs {
	}
	_, err := b.Campaign(ctx)
	assert.ErrorIs(t, err, elect.ErrClosed)
	w.term.Close()
	a.Close()
	assert.NoError(t, goleak.Find(before))
}
