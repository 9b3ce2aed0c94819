package elect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lead makes S001 the leader of a fresh cluster.
func lead(t *testing.T) (*cluster, *Election, *Term) {
	c := newCluster(t)
	e := c.host("S001")
	term, err := e.Campaign(context.Background())
	require.NoError(t, err)
	return c, e, term
}

func TestRenewal(t *testing.T) {
	c, _, term := lead(t)
	_, mtime := c.lease()
	for i := range 3 {
		c.clk.step(t, 1, DefaultRenew)
		c.clk.waitTimers(t, 1)
		l, m := c.lease()
		assert.Equal(t, Lease{Holder: "S001", Address: "S001:9530", Epoch: 1, RenewCount: int64(i + 1)}, l)
		assert.False(t, m.Before(mtime), "the file is rewritten")
		mtime = m
	}
	assert.Nil(t, term.Err())

	t.Run("missing lease is rewritten", func(t *testing.T) {
		require.NoError(t, os.Remove(filepath.Join(c.dir, instance+".lease.json")))
		c.clk.step(t, 1, DefaultRenew)
		c.clk.waitTimers(t, 1)
		l, _ := c.lease()
		assert.Equal(t, int64(1), l.Epoch)
		assert.Equal(t, int64(4), l.RenewCount)
		assert.True(t, pending(term.Lost()))
	})
	t.Run("unreadable lease is rewritten", func(t *testing.T) {
		require.NoError(t, os.WriteFile(filepath.Join(c.dir, instance+".lease.json"), []byte("{"), 0o644))
		c.clk.step(t, 1, DefaultRenew)
		c.clk.waitTimers(t, 1)
		l, _ := c.lease()
		assert.Equal(t, int64(5), l.RenewCount)
		assert.True(t, pending(term.Lost()))
	})
	t.Run("lower epoch is overwritten", func(t *testing.T) {
		c.putLease(Lease{Holder: "old", Address: "old:9530", Epoch: 0})
		c.clk.step(t, 1, DefaultRenew)
		c.clk.waitTimers(t, 1)
		l, _ := c.lease()
		assert.Equal(t, "S001", l.Holder)
		assert.True(t, pending(term.Lost()))
	})
}

func TestNewerTermEndsRenewal(t *testing.T) {
	for name, newer := range map[string]Lease{
		"higher epoch":                 {Holder: "S002", Address: "S002:9530", Epoch: 2},
		"same epoch from other holder": {Holder: "S002", Address: "S002:9530", Epoch: 1},
	} {
		t.Run(name, func(t *testing.T) {
			c, _, term := lead(t)
			c.putLease(newer)
			_, mtime := c.lease()
			c.clk.step(t, 1, DefaultRenew)
			recv(t, term.Lost())
			assert.ErrorIs(t, term.Err(), ErrSuperseded)
			c.clk.waitTimers(t, 0) // renewal has stopped

			c.clk.Advance(10 * DefaultRenew)
			l, m := c.lease()
			assert.Equal(t, newer, l, "a lost term writes nothing more")
			assert.True(t, m.Equal(mtime))

			err := term.Resign(context.Background())
			assert.ErrorIs(t, err, ErrNotLeader)
			assert.ErrorIs(t, err, ErrSuperseded)
			l, _ = c.lease()
			assert.Equal(t, newer, l, "nor does Resign")
		})
	}
}

func TestFailedWriteEndsRenewal(t *testing.T) {
	c, e, term := lead(t)
	c.clk.waitTimers(t, 1)
	// The seam stands in for a share gone read-only: tests run as root, which
	// writes to a read-only directory anyway.
	injected := errors.New("injected: share is read-only")
	e.rename = func(string, string) error { return injected }
	c.clk.step(t, 1, DefaultRenew)
	recv(t, term.Lost())
	assert.ErrorIs(t, term.Err(), injected)
	assert.NotErrorIs(t, term.Err(), ErrSuperseded)
	c.clk.waitTimers(t, 0)

	l, _ := c.lease()
	assert.Equal(t, int64(0), l.RenewCount, "the lease is as last written")
	tmps, err := filepath.Glob(filepath.Join(c.dir, "*.tmp"))
	require.NoError(t, err)
	assert.Empty(t, tmps, "the failed write leaves no temp file")
}

func TestResign(t *testing.T) {
	c, _, term := lead(t)
	c.clk.step(t, 1, DefaultRenew)
	c.clk.waitTimers(t, 1)
	require.NoError(t, term.Resign(context.Background()))
	c.clk.waitTimers(t, 0)
	l, _ := c.lease()
	assert.Equal(t, Lease{Holder: "S001", Address: "S001:9530", Epoch: 1, RenewCount: 2, Released: true}, l)
	assert.True(t, pending(term.Lost()), "resigning is not losing")

	t.Run("cancelled ctx leaves the lease as it is", func(t *testing.T) {
		c, _, term := lead(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, term.Resign(ctx), context.Canceled)
		l, _ := c.lease()
		assert.False(t, l.Released)
		c.clk.waitTimers(t, 0) // renewal stopped all the same
	})
	t.Run("newer term in the lease", func(t *testing.T) {
		c, _, term := lead(t)
		newer := Lease{Holder: "S002", Address: "S002:9530", Epoch: 2}
		c.putLease(newer)
		assert.ErrorIs(t, term.Resign(context.Background()), ErrNotLeader)
		l, _ := c.lease()
		assert.Equal(t, newer, l)
	})
}
