package hostapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/apply"
)

// crossed is err as a client has it once it crossed the API as JSON.
func crossed(t *testing.T, err error) error {
	t.Helper()
	b, jerr := json.Marshal(Encode(err))
	require.NoError(t, jerr)
	var body ErrorBody
	require.NoError(t, json.Unmarshal(b, &body))
	return body.Err()
}

// TestRefusalsCrossTheWire: the host's refusals come back with their type,
// their fields and their hint, wrapped or not, in a step's error or not.
func TestRefusalsCrossTheWire(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	err := crossed(t, fmt.Errorf("apply: %w", &LockedError{Holder: "graft apply by ci", Since: since}))
	var locked *LockedError
	require.ErrorAs(t, err, &locked)
	assert.Equal(t, "graft apply by ci", locked.Holder)
	assert.True(t, since.Equal(locked.Since))

	err = crossed(t, &StaleError{Reason: "the running state changed"})
	var stale *StaleError
	require.ErrorAs(t, err, &stale)
	assert.Equal(t, "the running state changed", stale.Reason)
	assert.Equal(t, "make a new plan with graft plan --out", stale.Hint())

	err = crossed(t, &NothingAppliedError{})
	assert.ErrorAs(t, err, new(*NothingAppliedError))

	b := Encode(fmt.Errorf("start db: %w", apply.ErrCancelled))
	b.Step = &Step{ID: "start:db", Op: "start", Plugin: "db"}
	err = b.Err()
	var stepErr *StepError
	require.ErrorAs(t, err, &stepErr)
	assert.Equal(t, "start:db", stepErr.Step.ID)
	assert.ErrorIs(t, err, apply.ErrCancelled)
	assert.EqualError(t, err, "start db: apply cancelled: steps not begun were skipped", "the host's text")
}

// hintedErr is an error of a kind the API does not know, with a hint.
type hintedErr struct{}

func (hintedErr) Error() string { return "the disk is full" }
func (hintedErr) Hint() string  { return "free some space" }

// TestUnknownErrorsKeepTextAndHint: an error of no known kind, or of a
// known kind whose fields do not decode (a host of another version), is
// known by its text, and keeps its hint.
func TestUnknownErrorsKeepTextAndHint(t *testing.T) {
	err := crossed(t, hintedErr{})
	assert.EqualError(t, err, "the disk is full")
	var hint interface{ Hint() string }
	require.ErrorAs(t, err, &hint)
	assert.Equal(t, "free some space", hint.Hint())

	body := ErrorBody{Error: "another apply is under way", Kind: KindLocked, Detail: json.RawMessage(`"not an object"`), Hint: "wait"}
	err = body.Err()
	assert.False(t, errors.As(err, new(*LockedError)), "no fields, no type")
	assert.EqualError(t, err, "another apply is under way")
	require.ErrorAs(t, err, &hint)
	assert.Equal(t, "wait", hint.Hint())
}
