package elect

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// until steps the clock by d, with n goroutines parked each time, until a
// campaign returns. A result seen one step late does not matter: takeover
// times are read from the term (won), not from the clock here.
func (c *cluster) until(n int, d time.Duration, ch <-chan result) result {
	c.t.Helper()
	for range 1000 {
		c.clk.waitTimers(c.t, n)
		select {
		case r := <-ch:
			return r
		default:
		}
		c.clk.Advance(d)
	}
	c.t.Fatal("no campaign returned")
	return result{}
}

func TestColdStart(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	type indexed struct {
		i int
		result
	}
	results := make(chan indexed, 5)
	var hosts []*Election
	for i := range 5 {
		e := c.host(fmt.Sprintf("S%03d", i+1))
		hosts = append(hosts, e)
		go func() {
			term, err := e.Campaign(ctx)
			results <- indexed{i, result{term, err}}
		}()
	}

	first := recv(t, results)
	require.NoError(t, first.err)
	assert.Equal(t, int64(1), first.term.Epoch())
	leader := fmt.Sprintf("S%03d", first.i+1)
	c.clk.waitTimers(t, 5) // the term's renewal and four losers backing off or following
	l, _ := c.lease()
	assert.Equal(t, Lease{Holder: leader, Address: leader + ":9530", Epoch: 1}, l)
	assert.NoFileExists(t, c.lockPath(), "the lock is dropped once the lease is written")

	var watches []*watch
	for i, e := range hosts {
		if i == first.i {
			continue
		}
		w := observe(ctx, e)
		watches = append(watches, w)
		o := w.waitFor(t, func(Observation) bool { return true })
		assert.Equal(t, Observation{Lease: l}, o, "the rest observe the leader")
	}
	// Past every backoff (at most 0.9 s), a renewal and a few polls.
	for range 20 {
		c.clk.step(t, 9, 500*time.Millisecond)
	}
	c.clk.waitTimers(t, 9)
	assert.Len(t, results, 0, "exactly one leads")
	following := 0
	for _, e := range hosts {
		if e.Following() {
			following++
		}
	}
	assert.Equal(t, 4, following, "the rest follow")
	l, _ = c.lease()
	assert.Equal(t, int64(1), l.Epoch)
	assert.Equal(t, leader, l.Holder)
	assert.GreaterOrEqual(t, l.RenewCount, int64(3))
	for _, w := range watches {
		assert.Len(t, w.all(), 1, "renewals are not changes of leader")
	}
	for i, e := range hosts {
		got, age, err := e.Leader(ctx)
		require.NoError(t, err)
		assert.Equal(t, l, got, "host %d", i)
		assert.Less(t, age, DefaultTTL)
	}

	cancel()
	for range 4 {
		r := recv(t, results)
		assert.ErrorIs(t, r.err, context.Canceled, "cancelling ctx ends a follower's wait")
		assert.Nil(t, r.term)
	}
	for _, w := range watches {
		recv(t, w.done)
	}
}

func TestBootstrap(t *testing.T) {
	ghost := Lease{Holder: "ghost", Address: "ghost:9530", Epoch: 4, RenewCount: 9}
	immediate := []struct {
		name  string
		lease Lease
	}{
		{"lease released", Lease{Holder: "ghost", Address: "ghost:9530", Epoch: 4, Released: true}},
		{"own lease from before a restart", Lease{Holder: "S001", Address: "S001:9530", Epoch: 4}},
	}
	for _, tc := range immediate {
		t.Run(tc.name, func(t *testing.T) { contendsAtOnce(t, tc.lease) })
	}

	// A host that has just started has no history of a lease it finds:
	// it follows it as any host does. Its leader may be restarting its
	// plugin and answer nothing (the rule before this one dialled its
	// address, and took the lease of a live leader that did not answer);
	// one that stopped renewing may be stopping its plugin until ttl after
	// its last renewal, which is no later than the first sight of it.
	t.Run("a cold host follows a leader that renews", func(t *testing.T) {
		c := newCluster(t)
		c.putLease(ghost)
		res := campaign(context.Background(), c.host("S001"))
		c.renewEveryPoll(ghost, 10) // 20 seconds of renewals, every poll
		c.clk.waitTimers(t, 1)
		assert.True(t, pending(res), "it follows: its leader renews")
		frozen := c.clk.Now()
		r := c.until(1, DefaultPoll, res)
		require.NoError(t, r.err)
		assert.Equal(t, int64(5), r.term.Epoch())
		assert.Greater(t, r.term.won.Sub(frozen), DefaultTTL-DefaultPoll, "once renewed, it is taken only once frozen for ttl")
	})
	t.Run("a cold host takes a lease never renewed once it froze for ttl", func(t *testing.T) {
		c := newCluster(t)
		c.putLease(ghost)
		first := c.clk.Now()
		r := c.until(1, DefaultPoll, campaign(context.Background(), c.host("S001")))
		require.NoError(t, r.err)
		assert.Equal(t, int64(5), r.term.Epoch())
		took := r.term.won.Sub(first)
		assert.Greater(t, took, DefaultTTL, "not before ttl from its first sight: its leader's plugin may still be stopping")
		assert.LessOrEqual(t, took, DefaultTTL+2*DefaultPoll)
	})

	t.Run("unreadable lease is replaced", func(t *testing.T) {
		c := newCluster(t)
		require.NoError(t, os.WriteFile(filepath.Join(c.dir, instance+".lease.json"), []byte("{garbage"), 0o644))
		term, err := c.host("S001").Campaign(context.Background())
		require.NoError(t, err)
		assert.Equal(t, int64(1), term.Epoch())
	})

	t.Run("leader just elected is followed though it does not answer yet", func(t *testing.T) {
		c := newCluster(t)
		fresh := Lease{Holder: "ghost", Address: "ghost:9530", Epoch: 4}
		c.putLease(fresh)
		res := campaign(context.Background(), c.host("S001"))
		c.clk.waitTimers(t, 1)
		assert.True(t, pending(res), "its plugin is starting: S001 follows")
		// Renewals come, but the address never answers: S001 has followed,
		// so only the file's freezing makes it contend.
		c.renewEveryPoll(fresh, 5)
		c.clk.waitTimers(t, 1)
		assert.True(t, pending(res))
		r := c.until(1, DefaultPoll, res)
		require.NoError(t, r.err)
		assert.Equal(t, int64(5), r.term.Epoch())
	})

	// A lease written since this host first knew the file has a history:
	// its leader wrote it less than ttl ago, and its plugin may still be
	// starting. The host follows it, answer or not, and only the file's
	// freezing for ttl makes it contend; nor does a read that fails
	// meanwhile (the file turned to garbage) erase that history.
	for _, tc := range []struct {
		name  string
		after func(c *cluster)
	}{
		{"lease written since this host looked is followed though it does not answer", func(*cluster) {}},
		{"a failed read keeps the history", func(c *cluster) {
			require.NoError(t, os.WriteFile(filepath.Join(c.dir, instance+".lease.json"), []byte("{garbage"), 0o644))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			e := c.host("S001")
			e.look() // no lease yet
			c.putLease(ghost)
			written := c.clk.Now()
			require.True(t, e.look().witnessed)
			tc.after(c)
			r := c.until(1, DefaultPoll, campaign(context.Background(), e))
			require.NoError(t, r.err)
			assert.Equal(t, int64(5), r.term.Epoch())
			assert.Greater(t, r.term.won.Sub(written), DefaultTTL, "not before the file froze for ttl")
		})
	}

	t.Run("live leader is followed until its file freezes", func(t *testing.T) {
		c := newCluster(t)
		c.putLease(ghost)
		res := campaign(context.Background(), c.host("S001"))
		// The ghost renews every poll for a minute: S001 follows.
		c.renewEveryPoll(ghost, 30)
		c.clk.waitTimers(t, 1)
		assert.True(t, pending(res))
		frozen := c.clk.Now()
		r := c.until(1, DefaultPoll, res)
		require.NoError(t, r.err)
		assert.Equal(t, int64(5), r.term.Epoch())
		took := r.term.won.Sub(frozen)
		assert.Greater(t, took, DefaultTTL-DefaultPoll, "not before the file froze for ttl")
		assert.LessOrEqual(t, took, DefaultTTL+2*DefaultPoll)
	})
}

// contendsAtOnce checks that S001, finding lease l in the directory,
// contends at once and takes its epoch+1.
func contendsAtOnce(t *testing.T, l Lease) {
	c := newCluster(t)
	c.putLease(l)
	term, err := c.host("S001").Campaign(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(5), term.Epoch(), "contends at once and takes epoch+1")
	got, _ := c.lease()
	assert.Equal(t, Lease{Holder: "S001", Address: "S001:9530", Epoch: 5}, got)
}

// renewEveryPoll renews lease l as its holder would, times times: each
// time it waits for one timer, advances the clock a poll and renews.
func (c *cluster) renewEveryPoll(l Lease, times int) {
	c.t.Helper()
	for range times {
		c.clk.step(c.t, 1, DefaultPoll)
		l.RenewCount++
		c.putLease(l)
	}
}

func TestCrashedLeaderIsReplaced(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e0, e1 := c.host("S001"), c.host("S002")
	t0, err := e0.Campaign(ctx)
	require.NoError(t, err)
	res := campaign(ctx, e1)
	w := observe(ctx, e1)
	w.waitFor(t, epochIs(1))
	for range 10 {
		c.clk.step(t, 3, DefaultPoll)
	}
	c.clk.waitTimers(t, 3)
	require.True(t, pending(res))

	t0.Close() // a crash: no more renewals, nothing released
	crash := c.clk.Now()
	r := c.until(2, DefaultPoll, res)
	require.NoError(t, r.err)
	assert.Equal(t, int64(2), r.term.Epoch())
	took := r.term.won.Sub(crash)
	assert.Greater(t, took, DefaultTTL-DefaultRenew-DefaultPoll, "waits for the file to freeze past ttl")
	assert.LessOrEqual(t, took, DefaultTTL+2*DefaultPoll)

	c.clk.step(t, 2, DefaultPoll) // the observer's next poll
	o := w.waitFor(t, epochIs(2))
	assert.Equal(t, "S002", o.Lease.Holder, "the follower reports the new leader")
	assert.Equal(t, "S002:9530", o.Lease.Address)
	for _, o := range w.all() {
		assert.Contains(t, []int64{1, 2}, o.Lease.Epoch)
	}
	select {
	case <-t0.Lost():
		t.Fatal("a closed term is not lost")
	default:
	}
	cancel()
	recv(t, w.done)
}

func TestResignHandsOverWithinOnePoll(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	e0, e1 := c.host("S001"), c.host("S002")
	t0, err := e0.Campaign(ctx)
	require.NoError(t, err)
	res := campaign(ctx, e1)
	for range 5 {
		c.clk.step(t, 2, time.Second)
	}
	c.clk.waitTimers(t, 2)

	require.NoError(t, t0.Resign(ctx))
	resigned := c.clk.Now()
	l, _ := c.lease()
	assert.True(t, l.Released)
	assert.Equal(t, int64(1), l.Epoch)
	require.NoError(t, t0.Resign(ctx), "resigning twice is harmless")

	r := c.until(1, 100*time.Millisecond, res)
	require.NoError(t, r.err)
	assert.Equal(t, int64(2), r.term.Epoch())
	assert.LessOrEqual(t, r.term.won.Sub(resigned), DefaultPoll)
	assert.Nil(t, t0.Err())
}

func TestCampaignOnClosedElection(t *testing.T) {
	c := newCluster(t)
	c.putLease(Lease{Holder: "ghost", Address: "ghost:9530", Epoch: 1})
	e := c.host("S001")
	res := campaign(context.Background(), e)
	c.clk.waitTimers(t, 1)
	e.Close()
	assert.ErrorIs(t, recv(t, res).err, ErrClosed)
	_, err := e.Campaign(context.Background())
	assert.ErrorIs(t, err, ErrClosed)
	_, ok := <-e.Observe(context.Background())
	assert.False(t, ok, "a closed election's Observe is closed")
}

// TestEpochExhausted: a lease that has had epoch math.MaxInt64 is never
// followed by a wrapped or repeated one: a contender gets an
// *ExhaustedError at once, the lease unchanged; the epoch below it is
// still taken.
func TestEpochExhausted(t *testing.T) {
	t.Run("the largest is taken", func(t *testing.T) {
		c := newCluster(t)
		c.putLease(Lease{Holder: "ghost", Address: "ghost:9530", Epoch: math.MaxInt64 - 1, Released: true})
		term, err := c.host("S001").Campaign(context.Background())
		require.NoError(t, err)
		assert.Equal(t, int64(math.MaxInt64), term.Epoch())
		term.Close()
	})
	t.Run("none is left", func(t *testing.T) {
		c := newCluster(t)
		last := Lease{Holder: "ghost", Address: "ghost:9530", Epoch: math.MaxInt64, Released: true}
		c.putLease(last)
		term, err := c.host("S001").Campaign(context.Background())
		assert.Nil(t, term)
		var exhausted *ExhaustedError
		require.ErrorAs(t, err, &exhausted)
		assert.Equal(t, "elect "+instance+" in "+c.dir+": the lease has had epoch 9223372036854775807, the largest there is: no later one can be elected", err.Error())
		assert.Contains(t, exhausted.Hint(), "another instance name")
		l, _ := c.lease()
		assert.Equal(t, last, l, "the lease is left as it was")
		assert.NoFileExists(t, c.lockPath(), "the lock is dropped")
	})
	t.Run("a lease file lost after the largest", func(t *testing.T) {
		c := newCluster(t)
		c.putLease(Lease{Holder: "ghost", Address: "ghost:9530", Epoch: math.MaxInt64, Released: true})
		e := c.host("S001")
		e.noteEpoch(math.MaxInt64) // read before the file was lost
		require.NoError(t, os.Remove(filepath.Join(c.dir, instance+".lease.json")))
		_, err := e.Campaign(context.Background())
		var exhausted *ExhaustedError
		require.ErrorAs(t, err, &exhausted, "what this host saw still counts")
	})
}
