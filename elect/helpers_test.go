package elect

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const instance = "relay"

// cluster is a few hosts sharing one directory and one fake clock. Their
// addresses answer unless marked down, as if each host's plugin listened.
type cluster struct {
	t   *testing.T
	dir string
	clk *fakeClock
}

func newCluster(t *testing.T) *cluster {
	return &cluster{t: t, dir: t.TempDir(), clk: newFakeClock()}
}

// host makes an election with the default durations; edit changes its
// config first.
func (c *cluster) host(id string, edit ...func(*Config)) *Election {
	cfg := Config{Dir: c.dir, Instance: instance, HostID: id, Address: id + ":9530", Clock: c.clk}
	for _, f := range edit {
		f(&cfg)
	}
	e, err := New(cfg)
	require.NoError(c.t, err)
	c.t.Cleanup(e.Close)
	return e
}

// lease reads the lease file as another program would.
func (c *cluster) lease() (Lease, time.Time) {
	c.t.Helper()
	st, err := readLease(filepath.Join(c.dir, instance+".lease.json"))
	require.NoError(c.t, err)
	return st.lease, st.mtime
}

// putLease writes the lease file as another host would.
func (c *cluster) putLease(l Lease) {
	c.t.Helper()
	data, err := json.Marshal(l)
	require.NoError(c.t, err)
	tmp := filepath.Join(c.dir, "put.tmp")
	require.NoError(c.t, os.WriteFile(tmp, data, 0o644))
	require.NoError(c.t, os.Rename(tmp, filepath.Join(c.dir, instance+".lease.json")))
}

func (c *cluster) lockPath() string { return filepath.Join(c.dir, instance+".lock") }

type result struct {
	term *Term
	err  error
}

// campaign runs e.Campaign on its own goroutine. The goroutine ends when
// the test ends, by ctx or by the election's Close.
func campaign(ctx context.Context, e *Election) <-chan result {
	ch := make(chan result, 1)
	go func() {
		t, err := e.Campaign(ctx)
		ch <- result{t, err}
	}()
	return ch
}

// recv waits for an event; the real-time limit only turns a hang into a
// failure.
func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		panic("unreachable")
	}
}

func pending[T any](ch <-chan T) bool {
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// watch drains e.Observe, so the observer always goes back to its timer,
// and keeps what it saw.
type watch struct {
	mu   sync.Mutex
	obs  []Observation
	more chan struct{}
	done chan struct{}
}

func observe(ctx context.Context, e *Election) *watch {
	w := &watch{more: make(chan struct{}), done: make(chan struct{})}
	ch := e.Observe(ctx)
	go func() {
		defer close(w.done)
		for o := range ch {
			w.mu.Lock()
			w.obs = append(w.obs, o)
			close(w.more)
			w.more = make(chan struct{})
			w.mu.Unlock()
		}
	}()
	return w
}

// waitFor waits until an observation satisfies ok and returns it.
func (w *watch) waitFor(t testing.TB, ok func(Observation) bool) Observation {
	t.Helper()
	limit := time.After(10 * time.Second)
	for seen := 0; ; {
		w.mu.Lock()
		obs, more := w.obs, w.more
		w.mu.Unlock()
		for ; seen < len(obs); seen++ {
			if ok(obs[seen]) {
				return obs[seen]
			}
		}
		select {
		case <-more:
		case <-limit:
			t.Fatalf("no such observation; saw %+v", obs)
		}
	}
}

func (w *watch) all() []Observation {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Observation(nil), w.obs...)
}

func epochIs(n int64) func(Observation) bool {
	return func(o Observation) bool { return o.Lease.Epoch == n && !o.Dead }
}
