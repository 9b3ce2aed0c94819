//go:build linux

package server

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/plan"
)

// TestEditedPlanRefused: a saved plan edited by hand (a step for a plugin
// not in its spec, a step waiting on a missing one, a cycle, an edge left
// out) is refused over the API as a *plan.VerifyError, a 400, before any
// step begins: the host serves on and every plugin runs as before.
func TestEditedPlanRefused(t *testing.T) {
	dir := t.TempDir()
	h := open(t, filepath.Join(dir, ".graft"))
	defer h.Shutdown(context.Background())
	c := serve(t, h)
	ctx := context.Background()
	require.NoError(t, c.Apply(ctx, hostapi.ApplyRequest{Source: wire(dir, twoSleeps)}, nil))
	before := h.Status()

	src := testsupport.Source(dir, "name: shop\nplugins:\n  db: {command: [sleep, '61']}\n  api: {command: [sleep, '60'], uses: [db]}\n")
	saved, err := h.Plan(src)
	require.NoError(t, err)
	require.Len(t, saved.Steps, 4, "stop:api, stop:db, start:db, start:api")

	for name, edit := range map[string]func(p *plan.Plan){
		"unknown plugin": func(p *plan.Plan) {
			p.Steps = append(p.Steps, plan.Step{ID: "start:ghost", Op: plan.OpStart, Plugin: "ghost", After: plan.After()})
		},
		"missing after": func(p *plan.Plan) { p.Steps[3].After = plan.After("stop:nope") },
		"cycle":         func(p *plan.Plan) { p.Steps[0].After = plan.After("start:api") },
		"edge left out": func(p *plan.Plan) { p.Steps[3].After = plan.After("stop:api") },
	} {
		t.Run(name, func(t *testing.T) {
			edited := clonePlan(t, saved)
			edit(edited)
			var events []hostapi.Message
			err := c.Apply(ctx, hostapi.ApplyRequest{Source: hostapi.Source(src), Plan: raw(t, edited)}, func(m hostapi.Message) { events = append(events, m) })
			var bad *plan.VerifyError
			require.ErrorAs(t, err, &bad)
			assert.Contains(t, err.Error(), "bad plan: step ")
			assert.Empty(t, events, "refused before the plan was carried out")
			assert.Equal(t, http.StatusBadRequest, statusFor(err))
			assert.Contains(t, hostapi.Encode(err).Hint, "graft plan --out")

			after, err := c.Status(ctx)
			require.NoError(t, err, "the host serves on")
			require.Len(t, after.Plugins, 2)
			for i, r := range after.Plugins {
				assert.Equal(t, string(plan.Running), r.Status, r.Name)
				assert.Equal(t, before.Plugins[i].Instance, r.Instance, "%s was not touched", r.Name)
			}
		})
	}

	// The plan as saved is carried out.
	require.NoError(t, c.Apply(ctx, hostapi.ApplyRequest{Source: hostapi.Source(src), Plan: raw(t, saved)}, nil))
	assert.Equal(t, map[string]plan.Status{"db": plan.Running, "api": plan.Running}, statuses(h.Status()))
}

func clonePlan(t *testing.T, p *plan.Plan) *plan.Plan {
	t.Helper()
	out := *p
	out.Steps = nil
	for _, s := range p.Steps {
		s.After = append([]plan.Edge{}, s.After...)
		out.Steps = append(out.Steps, s)
	}
	return &out
}

// raw is p's JSON, as a saved plan crosses the API.
func raw(t *testing.T, p *plan.Plan) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(p)
	require.NoError(t, err)
	return b
}
