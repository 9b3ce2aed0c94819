package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/spec"
)

// TestNewCompleted: a Supervisor brought back completed reports what it
// was given, has reached every condition, and stops at once, on no
// placement: nothing of it runs.
func TestNewCompleted(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := NewCompleted(nil, Request{Plugin: &spec.Plugin{Name: "migrate", Once: spec.Once{On: true}}}, State{
		Status: Running, PID: 42, Identity: Identity{ID: "abc", Generation: 3}, Since: since, Restarts: 2, LastError: "exited 1",
	})
	st := s.State()
	assert.Equal(t, Completed, st.Status)
	assert.Zero(t, st.PID, "no process")
	assert.Equal(t, Identity{ID: "abc", Generation: 3}, st.Identity)
	assert.Equal(t, since, st.Since)
	assert.Equal(t, 2, st.Restarts)
	assert.Equal(t, "exited 1", st.LastError)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, c := range []spec.Condition{spec.UntilStarted, spec.UntilReady, spec.UntilHealthy, spec.UntilCompleted} {
		assert.NoError(t, s.Await(ctx, c), c)
	}
	outcome, err := s.Stop(ctx)
	require.NoError(t, err)
	assert.Equal(t, Exited, outcome)
}
