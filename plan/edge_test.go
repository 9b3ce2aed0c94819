package plan

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/spec"
)

// TestEdgeJSON: an edge without a condition is its step's id, as before
// conditions; one with a condition is an object; both read back.
func TestEdgeJSON(t *testing.T) {
	b, err := json.Marshal([]Edge{{Step: "stop:api"}, {Step: "start:migrate", Until: spec.UntilCompleted}})
	require.NoError(t, err)
	assert.Equal(t, `["stop:api",{"step":"start:migrate","until":"completed"}]`, string(b))
	var back []Edge
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, []Edge{{Step: "stop:api"}, {Step: "start:migrate", Until: spec.UntilCompleted}}, back)
	assert.Error(t, json.Unmarshal([]byte(`[{"step":"start:a","after":"x"}]`), &back), "unknown fields are refused")
}

// TestCheckConditions: a saved plan whose conditions differ from what its
// spec gives, or that puts one where none can be, is refused.
func TestCheckConditions(t *testing.T) {
	desired, err := spec.Parse("plugins.yaml", []byte(`plugins:
  migrate: {command: [m], once: true}
  api: {command: [a], uses: [{plugin: migrate, until: completed}]}
`))
	require.NoError(t, err)
	st := &State{}
	p, err := Diff(desired, st)
	require.NoError(t, err)
	require.NoError(t, p.Verify(desired, st))
	api := &p.Steps[len(p.Steps)-1]
	require.Equal(t, "start:api", api.ID)
	require.Equal(t, []Edge{{Step: "start:migrate", Until: spec.UntilCompleted}}, api.After)

	api.After[0].Until = spec.UntilStarted
	assert.EqualError(t, p.Verify(desired, st),
		"bad plan: step start:api: waits on [start:migrate until started], but the plan rules make it wait on [start:migrate until completed]")
	api.After[0].Until = "soon"
	assert.EqualError(t, p.VerifySteps(),
		"bad plan: step start:api: waits on start:migrate until soon: a condition is on the start of a provider, one of started, ready, healthy, completed")
}
