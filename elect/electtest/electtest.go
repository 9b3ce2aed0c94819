// Package electtest is the conformance suite of election backends: every
// elect.Backend (the shared directory's lease file, etcd) runs it from its
// own tests with a Kit, and so keeps the promises floating plugins rely on
// (docs/semantics.md, "Floating plugins: the election"): one leader at a
// time, epochs that grow, a resignation handed over, a lost leader
// replaced, observers that see every change of leader, and a closed
// election that leaves no goroutine behind.
package electtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/elect"
)

// Kit is how the suite makes a backend's elections.
type Kit struct {
	// Election returns a fresh election, shared by the hosts that join it
	// through the function it returns; each join is one host's Backend,
	// closed when the test ends.
	Election func(t *testing.T) func(hostID string) elect.Backend
	// TTL is how long a leader that stopped renewing keeps its term.
	TTL time.Duration
	// Handover is how long a resignation may take to be taken over.
	Handover time.Duration
}

// slack covers a loaded 2-core machine.
const slack = 2 * time.Second

// Run runs every case of the suite against kit.
func Run(t *testing.T, kit Kit) {
	t.Run("OneLeader", func(t *testing.T) { testOneLeader(t, kit) })
	t.Run("ResignHandsOver", func(t *testing.T) { testResign(t, kit) })
	t.Run("LostLeaderReplaced", func(t *testing.T) { testLost(t, kit) })
	t.Run("EpochsGrow", func(t *testing.T) { testEpochsGrow(t, kit) })
	t.Run("ObserversSeeEveryChange", func(t *testing.T) { testObserve(t, kit) })
	t.Run("CloseStopsGoroutines", func(t *testing.T) { testClose(t, kit) })
}

// won is one campaign's result.
type won struct {
	host string
	term elect.Leadership
	err  error
}

// campaign runs b's Campaign on a goroutine, sending its result on ch.
func campaign(ctx context.Context, host string, b elect.Backend, ch chan<- won) {
	go func() {
		term, err := b.Campaign(ctx)
		ch <- won{host, term, err}
	}()
}

func recv(t *testing.T, ch <-chan won, d time.Duration) won {
	t.Helper()
	select {
	case w := <-ch:
		require.NoError(t, w.err, w.host)
		return w
	case <-time.After(d):
		t.Fatalf("no campaign won within %s", d)
		return won{}
	}
}

// none checks that no campaign wins for d.
func none(t *testing.T, ch <-chan won, d time.Duration) {
	t.Helper()
	select {
	case w := <-ch:
		t.Fatalf("%s won too (epoch %v, err %v) while another leads", w.host, epochOf(w.term), w.err)
	case <-time.After(d):
	}
}

func epochOf(l elect.Leadership) any {
	if l == nil {
		return nil
	}
	return l.Epoch()
}

// hosts joins n hosts, h1 to hn, to a fresh election of kit.
func hosts(t *testing.T, kit Kit, n int) (map[string]elect.Backend, []string) {
	join := kit.Election(t)
	bs := map[string]elect.Backend{}
	var ids []string
	for i := range n {
		id := fmt.Sprintf("h%d", i+1)
		bs[id] = join(id)
		ids = append(ids, id)
	}
	return bs, ids
}

// testOneLeader: of three hosts campaigning at once, one leads with an
// epoch above zero; the others wait, follow it, and read it as leader.
func testOneLeader(t *testing.T, kit Kit) {
	bs, ids := hosts(t, kit, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan won, len(ids))
	for _, id := range ids {
		campaign(ctx, id, bs[id], ch)
	}
	first := recv(t, ch, kit.TTL+slack)
	assert.Positive(t, first.term.Epoch())
	assert.WithinDuration(t, time.Now().Add(kit.TTL/2), first.term.Deadline(), kit.TTL/2+slack/4, "the deadline is within ttl")
	none(t, ch, kit.TTL/2)
	for _, id := range ids {
		if id == first.host {
			continue
		}
		require.Eventually(t, bs[id].Following, slack, 10*time.Millisecond, "%s follows", id)
		l, _, err := bs[id].Leader(ctx)
		require.NoError(t, err)
		assert.Equal(t, first.host, l.Holder)
		assert.Equal(t, first.term.Epoch(), l.Epoch)
	}
	cancel()
	for range len(ids) - 1 {
		w := <-ch
		assert.Error(t, w.err, "a cancelled campaign fails")
	}
	first.term.Close()
}

// testResign: a leader that resigns hands over to a waiting host within
// kit.Handover, with a higher epoch; its term is no longer its own.
func testResign(t *testing.T, kit Kit) {
	bs, _ := hosts(t, kit, 2)
	ctx := t.Context()
	ch := make(chan won, 2)
	campaign(ctx, "h1", bs["h1"], ch)
	a := recv(t, ch, kit.TTL+slack)
	campaign(ctx, "h2", bs["h2"], ch)
	require.Eventually(t, bs["h2"].Following, slack, 10*time.Millisecond)
	start := time.Now()
	require.NoError(t, a.term.Resign(ctx))
	b := recv(t, ch, kit.Handover+slack)
	assert.Equal(t, "h2", b.host)
	assert.Less(t, time.Since(start), kit.Handover+slack)
	assert.Greater(t, b.term.Epoch(), a.term.Epoch())
	assert.Error(t, a.term.Resign(ctx), "a resigned term has nothing left to release")
	b.term.Close()
}

// testLost: a leader that stops renewing without releasing (Close, as a
// crash) is replaced once its term has run out, not before ttl minus one
// renewal, and within ttl and slack.
func testLost(t *testing.T, kit Kit) {
	bs, _ := hosts(t, kit, 2)
	ctx := t.Context()
	ch := make(chan won, 2)
	campaign(ctx, "h1", bs["h1"], ch)
	a := recv(t, ch, kit.TTL+slack)
	campaign(ctx, "h2", bs["h2"], ch)
	require.Eventually(t, bs["h2"].Following, slack, 10*time.Millisecond)
	start := time.Now()
	a.term.Close()
	b := recv(t, ch, kit.TTL+slack)
	took := time.Since(start)
	t.Logf("a lost leader replaced after %s (ttl %s)", took, kit.TTL)
	assert.Greater(t, took, kit.TTL/2, "not before the term ran out")
	assert.Less(t, took, kit.TTL+slack)
	assert.Greater(t, b.term.Epoch(), a.term.Epoch())
	b.term.Close()
}

// testEpochsGrow: terms taken in turn by two hosts have strictly growing
// epochs.
func testEpochsGrow(t *testing.T, kit Kit) {
	bs, ids := hosts(t, kit, 2)
	ctx := t.Context()
	var last int64
	for i := range 4 {
		id := ids[i%2]
		ch := make(chan won, 1)
		campaign(ctx, id, bs[id], ch)
		w := recv(t, ch, kit.TTL+slack)
		assert.Greater(t, w.term.Epoch(), last, "term %d", i)
		last = w.term.Epoch()
		require.NoError(t, w.term.Resign(ctx))
	}
}
