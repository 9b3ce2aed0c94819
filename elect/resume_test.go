package elect

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResume: a term whose program executed another (graft upgrade) is
// taken back by the next with the same epoch, the lease renewed at once;
// one released, of another epoch or holder, or last renewed too long ago
// is not, and nothing is written then.
func TestResume(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	old, err := c.host("S001").Campaign(ctx)
	require.NoError(t, err)
	epoch, renewed := old.Epoch(), old.Renewed()
	old.Close() // the exec: nothing renews, nothing is released
	before, _ := c.lease()

	next := c.host("S001")
	_, err = next.Resume(ctx, epoch+1, renewed)
	assert.ErrorIs(t, err, ErrNotResumable, "another epoch")
	_, err = next.Resume(ctx, epoch, renewed.Add(-DefaultTTL))
	assert.ErrorIs(t, err, ErrNotResumable, "renewed a ttl ago: a follower may lead")
	_, err = c.host("S002").Resume(ctx, epoch, renewed)
	assert.ErrorIs(t, err, ErrNotResumable, "another host's term")
	got, _ := c.lease()
	assert.Equal(t, before, got, "nothing written by a refusal")

	term, err := next.Resume(ctx, epoch, renewed)
	require.NoError(t, err)
	defer term.Close()
	assert.Equal(t, epoch, term.Epoch(), "the same epoch")
	got, _ = c.lease()
	assert.Equal(t, Lease{Holder: "S001", Address: "S001:9530", Epoch: epoch, RenewCount: before.RenewCount + 1}, got, "renewed at once")

	require.NoError(t, term.Resign(ctx))
	_, err = c.host("S001").Resume(ctx, epoch, c.clk.Now())
	assert.ErrorIs(t, err, ErrNotResumable, "a released term")
}
