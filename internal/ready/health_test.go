package ready

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/health"
	"github.com/graftland/graft/launch"
)

func check(interval, timeout, startPeriod time.Duration) *launch.Health {
	return &launch.Health{Interval: launch.Duration(interval), Timeout: launch.Duration(timeout), StartPeriod: launch.Duration(startPeriod)}
}

// TestRunTCP: a TCP check passes while something listens, and fails,
// naming the address, once nothing does.
func TestHealthTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hc := check(20*time.Millisecond, time.Second, 0)
	hc.TCP = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	var got []health.Result
	Health(ctx, hc, nil, func(r health.Result) {
		got = append(got, r)
		if len(got) == 2 {
			ln.Close()
		}
		if len(got) == 4 {
			cancel()
		}
	})
	require.Len(t, got, 4)
	assert.NoError(t, got[0].Err)
	assert.NoError(t, got[1].Err)
	require.Error(t, got[3].Err)
	assert.Contains(t, got[3].Err.Error(), hc.TCP)
}

// TestRunNeverOverlaps: an exec check slower than the interval is not
// started again before it ends; one slower than the timeout fails with
// a TimeoutError; no check runs during the start period.
func TestHealthNeverOverlaps(t *testing.T) {
	hc := check(10*time.Millisecond, 60*time.Millisecond, 100*time.Millisecond)
	hc.Exec = []string{"slow"}
	var running, most atomic.Int32
	var mu sync.Mutex
	var first time.Time
	exec := func(ctx context.Context, argv []string) error {
		mu.Lock()
		if first.IsZero() {
			first = time.Now()
		}
		mu.Unlock()
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-ctx.Done() // slower than the timeout
		return ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	began := time.Now()
	n := 0
	var last error
	Health(ctx, hc, exec, func(r health.Result) {
		if n++; n == 3 {
			last = r.Err
			cancel()
		}
	})
	assert.Equal(t, int32(1), most.Load(), "one check at a time")
	assert.GreaterOrEqual(t, first.Sub(began), 100*time.Millisecond, "nothing during the start period")
	var te *TimeoutError
	require.ErrorAs(t, last, &te)
	assert.Equal(t, "no answer within 60 millis: context deadline exceeded", last.Error())
}

// TestRunWithoutExec: an exec check where the placement cannot run one
// fails, saying so.
func TestHealthWithoutExec(t *testing.T) {
	hc := check(10*time.Millisecond, time.Second, 0)
	hc.Exec = []string{"true"}
	ctx, cancel := context.WithCancel(context.Background())
	var got error
	Health(ctx, hc, nil, func(r health.Result) { got = r.Err; cancel() })
	require.Error(t, got)
	assert.Contains(t, got.Error(), "exec checks cannot run for this placement")
}

// TestHealthChecks: results come on the channel until gone closes it;
// without a check there is no channel.
func TestHealthChecks(t *testing.T) {
	assert.Nil(t, HealthChecks(nil, nil, nil, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	hc := check(10*time.Millisecond, time.Second, 0)
	hc.TCP = ln.Addr().String()
	gone := make(chan struct{})
	results := HealthChecks(hc, nil, gone, nil)
	for range 3 {
		r, ok := <-results
		require.True(t, ok)
		assert.NoError(t, r.Err)
	}
	close(gone)
	for range results { // drains what was under way, then closes
	}
}
