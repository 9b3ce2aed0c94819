package apply

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/plan"
)

// TestEveryOpHasACarrier: the table of carriers has a row for each op a
// plan may have, and none for an op plans do not have.
func TestEveryOpHasACarrier(t *testing.T) {
	assert.ElementsMatch(t, plan.Ops, slices.Collect(maps.Keys(carriers)))
}

// TestUnknownOpFails: a step whose op has no carrier, which VerifySteps
// keeps Run from, fails, naming the op.
func TestUnknownOpFails(t *testing.T) {
	var events []Event
	r := &execution{ex: newScript(0), opt: Options{Events: func(e Event) { events = append(events, e) }}, done: make(chan outcome, 1)}
	r.do(context.Background(), plan.Step{ID: "delete:a", Op: "delete", Plugin: "a"})
	o := <-r.done
	require.EqualError(t, o.err, `unknown op "delete"`)
	require.Len(t, events, 2)
	assert.Equal(t, Failed, events[1].Phase)
	assert.Equal(t, `unknown op "delete"`, events[1].Error)
}
