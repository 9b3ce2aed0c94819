package runtime

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBackoff(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		attempt int
		u       float64
		want    time.Duration
	}{
		{1, 0.5, 100 * ms}, // no jitter at the middle
		{2, 0.5, 200 * ms},
		{3, 0.5, 400 * ms},
		{4, 0.5, 800 * ms},
		{5, 0.5, 1000 * ms}, // capped
		{9, 0.5, 1000 * ms},
		{1, 0, 80 * ms}, // -20%
		{1, 0.999999, 120 * ms},
		{9, 0.999999, 1000 * ms}, // jitter never passes max
		{9, 0, 800 * ms},
	} {
		got := Backoff(100*ms, 2, time.Second, c.attempt, c.u)
		assert.InDelta(t, float64(c.want), float64(got), float64(ms), "attempt %d, u %v", c.attempt, c.u)
	}
	assert.Equal(t, 3*time.Second, Backoff(3*time.Second, 1, time.Minute, 5, 0.5), "factor 1 is a constant delay")
}

// TestBackoffSaturates: the backoff stays within [0, max] where its float
// arithmetic overflows: factor^attempt at +Inf, a max whose float64 is
// 2^63, a delay of 0 (0 × +Inf is NaN), attempts beyond any retry.
func TestBackoffSaturates(t *testing.T) {
	const most = time.Duration(math.MaxInt64)
	for _, c := range []struct {
		name       string
		delay, max time.Duration
		factor     float64
		attempt    int
		u          float64
		want       time.Duration
	}{
		{"factor^attempt is +Inf", time.Second, 30 * time.Second, 2, 5000, 0.5, 30 * time.Second},
		{"the most attempts", time.Second, 30 * time.Second, 2, math.MaxInt, 0.999, 30 * time.Second},
		{"the largest factor", time.Second, time.Hour, math.MaxFloat64, 3, 0.5, time.Hour},
		{"max is the largest duration", time.Second, most, 2, 5000, 0.999, most},
		{"max is the largest duration, at +Inf and no jitter", time.Second, most, 10, 100_000, 0.5, most},
		{"delay and max the largest duration", most, most, 1, 1, 0.999, most},
		{"a delay of 0", 0, time.Minute, 2, 5000, 0.5, 0},
		{"a max of 0", time.Second, 0, 2, 3, 0.5, 0},
		{"the first attempt", time.Second, most, 2, 1, 0.5, time.Second},
	} {
		got := Backoff(c.delay, c.factor, c.max, c.attempt, c.u)
		assert.Equal(t, c.want, got, c.name)
		assert.GreaterOrEqual(t, got, time.Duration(0), c.name)
	}
	// Below max, the jitter still applies near the top of the range.
	got := Backoff(time.Second, 2, most, 5000, 0)
	assert.InDelta(t, 0.8*float64(most), float64(got), float64(most)/1e6)
	assert.Positive(t, got)
}

func TestExitString(t *testing.T) {
	assert.Equal(t, "exit status 3", Exit{Code: 3}.String())
	assert.Equal(t, "signal: SIGKILL", Exit{Code: -1, Signal: "SIGKILL"}.String())
	assert.True(t, Exit{}.Success())
	assert.False(t, Exit{Code: -1, Signal: "SIGTERM"}.Success())
}
