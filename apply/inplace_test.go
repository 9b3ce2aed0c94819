package apply

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/plan"
)

// inPlaceScript is a script that also reloads and updates.
type inPlaceScript struct{ *script }

func (s inPlaceScript) Reload(ctx context.Context, p string) (Result, error) {
	return s.step(ctx, plan.StepID(plan.OpReload, p))
}
func (s inPlaceScript) Update(ctx context.Context, p string) (Result, error) {
	return s.step(ctx, plan.StepID(plan.OpUpdate, p))
}

func inPlacePlan() *plan.Plan {
	p := &plan.Plan{Format: plan.Format, Steps: []plan.Step{
		{ID: "start:cache", Op: plan.OpStart, Plugin: "cache", After: []plan.Edge{}},
		{ID: "update:api", Op: plan.OpUpdate, Plugin: "api", After: []plan.Edge{{Step: "start:cache"}}},
		{ID: "reload:web", Op: plan.OpReload, Plugin: "web", After: []plan.Edge{}},
	}}
	return p
}

// TestInPlaceSteps: reload and update steps go to an InPlace executor,
// in the graph's order; an executor that cannot fails them, naming why.
func TestInPlaceSteps(t *testing.T) {
	s := newScript(0)
	require.NoError(t, Run(context.Background(), inPlacePlan(), inPlaceScript{s}, Options{}))
	assert.Len(t, s.ended, 3)
	assert.False(t, s.began["update:api"].Before(s.ended["start:cache"]), "the update waits for the new provider")

	err := Run(context.Background(), inPlacePlan(), newScript(0), Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "update api: this executor cannot change a plugin in place")
	assert.Contains(t, err.Error(), "reload web: this executor cannot change a plugin in place")
}
