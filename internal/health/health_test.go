package health

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTracker: unhealthy after failures in a row, healthy again at a
// passing check, starting until one passes.
func TestTracker(t *testing.T) {
	tr := NewTracker(3)
	fail := Result{Err: errors.New("refused")}
	assert.Equal(t, Starting, tr.Status())
	for i := 0; i < 2; i++ {
		_, to := tr.Observe(fail)
		assert.Equal(t, Starting, to, "failure %d of 3", i+1)
	}
	from, to := tr.Observe(fail)
	assert.Equal(t, Starting, from)
	assert.Equal(t, Unhealthy, to)
	assert.Equal(t, "refused", tr.LastError())
	assert.False(t, tr.Passed())
	from, to = tr.Observe(Result{})
	assert.Equal(t, Unhealthy, from)
	assert.Equal(t, Healthy, to)
	_, to = tr.Observe(fail)
	assert.Equal(t, Healthy, to, "one failure in a row is not three")
	assert.True(t, tr.Passed())
}
