package plan

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/spec"
)

// TestActionTable checks the rows of action.go against each other and
// against Summary's JSON form, so that a new row that leaves something
// out fails here rather than in a plan.
func TestActionTable(t *testing.T) {
	require.Len(t, actionRows, len(actionTable), "an action has two rows")
	require.Len(t, opRows, len(opTable), "an op has two rows")
	markers := map[string]Action{}
	for _, r := range actionTable {
		t.Run(string(r.action), func(t *testing.T) {
			assert.NotEmpty(t, r.marker)
			assert.NotContains(t, markers, r.marker, "the marker of %s too", markers[r.marker])
			markers[r.marker] = r.action
			assert.NotEmpty(t, r.past)
			assert.NotEmpty(t, r.tally)
			slots := map[int]Op{}
			for _, o := range r.ops {
				row := opOf(o)
				require.NotNil(t, row, "op %q has no row", o)
				assert.NotContains(t, slots, row.slot, "%s and %s take one slot", o, slots[row.slot])
				slots[row.slot] = o
			}
			assert.Equal(t, r.action, actionOf(r.action).action)

			// Its count is the JSON field named as the action, left out
			// when zero exactly when the summary line leaves it out.
			var s Summary
			*r.count(&s) = 3
			fields := summaryFields(t, s)
			assert.Equal(t, float64(3), fields[string(r.action)])
			_, zeroShown := summaryFields(t, Summary{})[string(r.action)]
			assert.Equal(t, r.shown == alwaysShown, zeroShown)
		})
	}
	for _, o := range Ops {
		used := false
		for _, r := range actionTable {
			used = used || r.slotOp(opOf(o).slot) == o
			// A start-first replace or restart calls for a swap.
			swap := Change{Action: r.action, Order: spec.StartFirst}
			used = used || slices.Contains(swap.ops(), o)
		}
		assert.True(t, used, "no action calls for op %s", o)
	}
	assert.Equal(t, "stop, start, reload, update or swap", opChoice)
}

func summaryFields(t *testing.T, s Summary) map[string]any {
	t.Helper()
	data, err := json.Marshal(s)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

// TestActionProperties pins what the table says of each action, as the
// differ and the graph read it.
func TestActionProperties(t *testing.T) {
	var restarting, inPlace, keeping, listed []Action
	for _, r := range actionTable {
		if r.consumers == restartsConsumers {
			restarting = append(restarting, r.action)
		}
		if r.inPlace() {
			inPlace = append(inPlace, r.action)
		}
		if r.keepsProcess() {
			keeping = append(keeping, r.action)
		}
		if r.listed() {
			listed = append(listed, r.action)
		}
	}
	assert.Equal(t, []Action{Start, Replace, Restart}, restarting)
	assert.Equal(t, []Action{Reload, Update}, inPlace)
	assert.Equal(t, []Action{Reload, Update, Keep}, keeping)
	assert.Equal(t, []Action{Start, Replace, Reload, Update, Restart, Stop}, listed)
	assert.Equal(t, []Action{Start, Replace, Reload, Update, Restart, Stop, Keep}, Actions)
	assert.Equal(t, []Op{OpStop, OpStart}, actionOf(Replace).ops)
	assert.Equal(t, OpReload, actionOf(Reload).slotOp(startSlot))
	assert.Equal(t, Op(""), actionOf(Reload).slotOp(stopSlot))
	assert.Nil(t, actionOf("delete"))
	assert.Nil(t, opOf("delete"))
}
