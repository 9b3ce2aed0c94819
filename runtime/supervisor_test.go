package runtime

import (
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

func TestExitString(t *testing.T) {
	assert.Equal(t, "exit status 3", Exit{Code: 3}.String())
	assert.Equal(t, "signal: SIGKILL", Exit{Code: -1, Signal: "SIGKILL"}.String())
	assert.True(t, Exit{}.Success())
	assert.False(t, Exit{Code: -1, Signal: "SIGTERM"}.Success())
}
