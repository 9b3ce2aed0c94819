package server

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/hashicorp/go-multierror"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/apply"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
)

// TestUnconfirmedOverTheWire: an unconfirmed stop crosses the wire as a
// *runtime.CleanupError whose cause is a *runtime.RemoteTerminationUnconfirmed,
// in the *hostapi.StepError of its step, with its hint.
func TestUnconfirmedOverTheWire(t *testing.T) {
	cause := &runtime.RemoteTerminationUnconfirmed{Plugin: "writer", Instance: "shop.writer", Generation: 4, Runner: "edge", Cause: errors.New("no confirmation within 25s")}
	failure := &apply.StepError{
		Step: plan.Step{ID: "stop:writer", Op: plan.OpStop, Plugin: "writer"},
		Err:  &runtime.CleanupError{Plugin: "writer", Outcome: runtime.Unconfirmed, Causes: multierror.Append(nil, cause)},
	}
	err := crossed(t, encode(failure))
	var step *hostapi.StepError
	require.ErrorAs(t, err, &step)
	assert.Equal(t, "stop:writer", step.Step.ID)
	var cleanup *runtime.CleanupError
	require.ErrorAs(t, err, &cleanup)
	assert.Equal(t, runtime.Unconfirmed, cleanup.Outcome)
	var got *runtime.RemoteTerminationUnconfirmed
	require.ErrorAs(t, err, &got)
	assert.Equal(t, "edge", got.Runner)
	assert.Equal(t, int64(4), got.Generation)
	assert.EqualError(t, got.Cause, "no confirmation within 25s")
	assert.Equal(t, failure.Error(), err.Error(), "the same text on both sides")
	var hint interface{ Hint() string }
	require.ErrorAs(t, err, &hint)
	assert.Contains(t, hint.Hint(), "check runner edge")

	// Cancelled applies too.
	assert.ErrorIs(t, crossed(t, encode(apply.ErrCancelled)), apply.ErrCancelled)
}

// crossed is the error of b as a client has it, once b crossed the API as
// JSON.
func crossed(t *testing.T, b hostapi.ErrorBody) error {
	t.Helper()
	j, err := json.Marshal(b)
	require.NoError(t, err)
	var back hostapi.ErrorBody
	require.NoError(t, json.Unmarshal(j, &back))
	return back.Err()
}
