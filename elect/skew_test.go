package elect

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A host whose wall clock is an hour off elects as the others do: it only
// takes intervals on its own clock and compares mtimes with mtimes.
func TestWallClockOffByAnHour(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ahead := func(cfg *Config) { cfg.Clock = shifted{c.clk, time.Hour} }
	behind := func(cfg *Config) { cfg.Clock = shifted{c.clk, -time.Hour} }
	e0, e1, e2 := c.host("S001", ahead), c.host("S002", behind), c.host("S003")
	t0, err := e0.Campaign(ctx)
	require.NoError(t, err)
	r1, r2 := campaign(ctx, e1), campaign(ctx, e2)
	w1 := observe(ctx, e1)
	w1.waitFor(t, epochIs(1))

	// A minute of renewals: the followers see a live leader.
	for range 30 {
		c.clk.step(t, 4, DefaultPoll)
	}
	c.clk.waitTimers(t, 4)
	assert.True(t, pending(r1))
	assert.True(t, pending(r2))
	for _, o := range w1.all() {
		assert.False(t, o.Dead)
	}
	_, age, err := e1.Leader(ctx)
	require.NoError(t, err)
	assert.LessOrEqual(t, age, DefaultRenew+DefaultPoll)

	t0.Close()
	crash := map[*Election]time.Time{e1: e1.cfg.Clock.Now(), e2: e2.cfg.Clock.Now()} // each on its own clock
	var won result
	for won.term == nil {
		c.clk.waitTimers(t, 3)
		select {
		case won = <-r1:
		case won = <-r2:
		default:
			c.clk.Advance(DefaultPoll)
		}
	}
	require.NoError(t, won.err)
	assert.Equal(t, int64(2), won.term.Epoch())
	took := won.term.won.Sub(crash[won.term.e])
	assert.Greater(t, took, DefaultTTL-DefaultRenew-DefaultPoll)
	assert.LessOrEqual(t, took, DefaultTTL+2*DefaultPoll)
	cancel()
	recv(t, w1.done)
}

func TestLockAgeIgnoresWallClock(t *testing.T) {
	t.Run("ahead: a fresh lock stays", func(t *testing.T) {
		c := newCluster(t)
		require.NoError(t, os.WriteFile(c.lockPath(), nil, 0o644))
		e := c.host("S001", func(cfg *Config) { cfg.Clock = shifted{c.clk, time.Hour} })
		res := campaign(context.Background(), e)
		c.clk.waitTimers(t, 1)
		assert.FileExists(t, c.lockPath())
		assert.True(t, pending(res))
	})
	t.Run("behind: a stale lock goes", func(t *testing.T) {
		c := newCluster(t)
		require.NoError(t, os.WriteFile(c.lockPath(), nil, 0o644))
		old := time.Now().Add(-time.Minute)
		require.NoError(t, os.Chtimes(c.lockPath(), old, old))
		e := c.host("S001", func(cfg *Config) { cfg.Clock = shifted{c.clk, -time.Hour} })
		res := campaign(context.Background(), e)
		c.clk.waitTimers(t, 1)
		assert.NoFileExists(t, c.lockPath())
		c.clk.Advance(e.backoff)
		require.NoError(t, recv(t, res).err)
	})
}
