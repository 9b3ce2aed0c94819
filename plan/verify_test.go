package plan

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/spec"
)

// checkCase is a spec and a running state: db is replaced, api (which
// uses it) restarts, old (no longer in the spec) stops.
func checkCase(t *testing.T) (*spec.Spec, *State, *Plan) {
	t.Helper()
	desired, err := spec.Parse("plugins.yaml", []byte(`name: shop
plugins:
  db: {command: [./db, --v2]}
  api: {command: [./api], uses: [db]}
`))
	require.NoError(t, err)
	db, api := Applied(desired, "db"), Applied(desired, "api")
	db.Hash, db.Status, api.Status = "sha256:old", Running, Running
	running := &State{Plugins: []Record{db, api, {Name: "old", Run: spec.Local, Status: Running, Hash: "sha256:gone"}}}
	p, err := Diff(desired, running)
	require.NoError(t, err)
	ids := func() (out []string) {
		for _, s := range p.Steps {
			out = append(out, s.ID)
		}
		return out
	}()
	require.Equal(t, []string{"stop:api", "stop:old", "stop:db", "start:db", "start:api"}, ids, "the case's steps, as the edits below assume")
	return desired, running, p
}

// clone copies a plan the way a saved one reaches the host: through JSON.
func clone(t *testing.T, p *Plan) *Plan {
	t.Helper()
	b, err := json.Marshal(p)
	require.NoError(t, err)
	var out Plan
	require.NoError(t, json.Unmarshal(b, &out))
	return &out
}

// TestCheckAcceptsDiffsPlans: the plan Diff makes passes, read back from
// JSON, for the golden cases and for random specs and states.
func TestCheckAcceptsDiffsPlans(t *testing.T) {
	desired, running, p := checkCase(t)
	require.NoError(t, clone(t, p).Verify(desired, running))

	dirs, err := filepath.Glob("testdata/plan/*")
	require.NoError(t, err)
	for _, dir := range dirs {
		desired, err := spec.Load(filepath.Join(dir, "plugins.yaml"))
		require.NoError(t, err)
		running := goldenState(t, dir)
		p, err := Diff(desired, running)
		require.NoError(t, err)
		assert.NoError(t, clone(t, p).Verify(desired, running), dir)
	}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, seed*7919))
		desired := randomSpec(t, rng)
		running := randomState(rng, desired)
		p, err := Diff(desired, running)
		require.NoError(t, err)
		require.NoError(t, clone(t, p).Verify(desired, running), "seed %d", seed)
	}
}

// TestCheckRefuses: every edit of a saved plan is refused with a
// *VerifyError that names the step or field at fault.
func TestCheckRefuses(t *testing.T) {
	step := func(p *Plan, id string) *Step {
		i := slices.IndexFunc(p.Steps, func(s Step) bool { return s.ID == id })
		require.GreaterOrEqual(t, i, 0, id)
		return &p.Steps[i]
	}
	change := func(p *Plan, plugin string) *Change {
		i := slices.IndexFunc(p.Changes, func(c Change) bool { return c.Plugin == plugin })
		require.GreaterOrEqual(t, i, 0, plugin)
		return &p.Changes[i]
	}
	cases := slices.Concat(stepRefusals(step), changeRefusals(change), ruleRefusals(step, change))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			desired, running, p := checkCase(t)
			saved := clone(t, p)
			tc.edit(saved)
			err := saved.Verify(desired, running)
			var bad *VerifyError
			require.ErrorAs(t, err, &bad)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, bad.Hint(), "graft plan --out")
		})
	}
}

// refusal is an edit of checkCase's plan, and what Verify says of it.
type refusal struct {
	name string
	edit func(p *Plan)
	want string
}

// stepRefusals are edits of the plan's format, project and steps that make
// it wrong in itself. step finds a step of the plan by its id.
func stepRefusals(step func(p *Plan, id string) *Step) []refusal {
	return []refusal{
		{"format", func(p *Plan) { p.Format = "graft.plan/v2" }, `bad plan: format "graft.plan/v2", want "graft.plan/v1"`},
		{"project", func(p *Plan) { p.Project = "other" }, `bad plan: project "other", but its spec's is "shop"`},
		{"unknown op", func(p *Plan) { step(p, "stop:old").Op = "delete" }, `bad plan: step stop:old: unknown op "delete": want stop, start, reload, update or swap`},
		{"no plugin", func(p *Plan) { step(p, "stop:old").Plugin = "" }, `bad plan: step stop:old: no plugin`},
		{"id", func(p *Plan) { step(p, "stop:old").Plugin = "db" }, `bad plan: step stop:old: its id does not match its op and plugin: want "stop:db"`},
		{"no id", func(p *Plan) { step(p, "stop:old").ID = "" }, `bad plan: step #2: its id does not match its op and plugin: want "stop:old"`},
		{"twice", func(p *Plan) { p.Steps = append(p.Steps, p.Steps[0]) }, `bad plan: step stop:api: listed twice`},
		{"missing after", func(p *Plan) { step(p, "start:api").After = After("stop:nope") },
			`bad plan: step start:api: waits on "stop:nope", which is not a step of the plan`},
		{"after itself", func(p *Plan) { step(p, "stop:db").After = After("stop:db") }, `bad plan: step stop:db: waits on itself`},
		{"after twice", func(p *Plan) { step(p, "stop:db").After = After("stop:api", "stop:api") }, `bad plan: step stop:db: waits on stop:api twice`},
		{"cycle", func(p *Plan) { step(p, "stop:api").After = After("start:api") },
			`bad plan: step stop:api: its steps wait on each other in a cycle: stop:api → start:api → start:db → stop:db → stop:api`},
		{"long cycle", func(p *Plan) {
			step(p, "stop:old").After = After("start:db")
			step(p, "stop:db").After = After("stop:old")
		},
			`bad plan: step stop:old: its steps wait on each other in a cycle: stop:old → start:db → stop:db → stop:old`},
		{"start of an unknown plugin", func(p *Plan) {
			p.Steps = append(p.Steps, Step{ID: "start:ghost", Op: OpStart, Plugin: "ghost", After: After()})
		}, `bad plan: step start:ghost: starts ghost, which is not in the plan's spec (plugins.yaml)`},
		{"start of a removed plugin", func(p *Plan) {
			p.Steps = append(p.Steps, Step{ID: "start:old", Op: OpStart, Plugin: "old", After: After("stop:old")})
		}, `bad plan: step start:old: starts old, which is not in the plan's spec (plugins.yaml)`},
		{"stop of an unknown plugin", func(p *Plan) {
			p.Steps = append(p.Steps, Step{ID: "stop:ghost", Op: OpStop, Plugin: "ghost", After: After()})
		}, `bad plan: step stop:ghost: stops ghost, which neither runs nor is in the plan's spec`},
	}
}

// changeRefusals are edits of the plan's changes that disagree with its
// steps or its spec. change finds the change of a plugin.
func changeRefusals(change func(p *Plan, plugin string) *Change) []refusal {
	return []refusal{
		{"change of an unknown plugin", func(p *Plan) { p.Changes = append(p.Changes, Change{Plugin: "ghost", Action: Keep}) },
			`bad plan: changes[3] (ghost): the plugin neither runs nor is in the plan's spec`},
		{"change twice", func(p *Plan) { p.Changes = append(p.Changes, p.Changes[0]) }, `bad plan: changes[3] (api): the plugin has two changes`},
		{"unknown action", func(p *Plan) { change(p, "old").Action = "delete" }, `bad plan: changes[2] (old): unknown action "delete"`},
		{"action without its steps", func(p *Plan) { change(p, "old").Action = Keep },
			`bad plan: changes[2] (old): a keep calls for no step, the plan has stop`},
		{"no change", func(p *Plan) {
			p.Changes = slices.DeleteFunc(p.Changes, func(c Change) bool { return c.Plugin == "old" })
		},
			`bad plan: steps for old, but no change`},
	}
}

// ruleRefusals are edits that leave a plan consistent in itself, but not
// the one its spec and the running state make.
func ruleRefusals(step func(p *Plan, id string) *Step, change func(p *Plan, plugin string) *Change) []refusal {
	return []refusal{
		{"no change of a kept plugin", func(p *Plan) {
			change(p, "api").Action = Keep
			p.Steps = slices.DeleteFunc(p.Steps, func(s Step) bool { return s.Plugin == "api" })
			step(p, "stop:db").After = After()
			p.Changes = slices.DeleteFunc(p.Changes, func(c Change) bool { return c.Plugin == "api" })
		}, `bad plan: no change for api, a plugin of its spec`},
		{"a restart left out", func(p *Plan) {
			change(p, "api").Action = Keep
			p.Steps = slices.DeleteFunc(p.Steps, func(s Step) bool { return s.Plugin == "api" })
			step(p, "stop:db").After = After()
		}, `bad plan: step stop:api: missing: its spec and the running state call for it`},
		{"an edge left out", func(p *Plan) { step(p, "start:api").After = After("stop:api") },
			`bad plan: step start:api: waits on [stop:api], but the plan rules make it wait on [start:db, stop:api]`},
		{"an edge added", func(p *Plan) { step(p, "stop:old").After = After("stop:api") },
			`bad plan: step stop:old: waits on [stop:api], but the plan rules make it wait on nothing`},
		{"out of order", func(p *Plan) { p.Steps[0], p.Steps[1] = p.Steps[1], p.Steps[0] },
			`bad plan: step stop:old: out of order: step 1 of the plan of its spec and the running state is stop:api`},
		{"a replace made a start", func(p *Plan) {
			change(p, "db").Action = Start
			p.Steps = slices.DeleteFunc(p.Steps, func(s Step) bool { return s.ID == "stop:db" })
			step(p, "start:db").After = After()
		}, `bad plan: step stop:db: missing: its spec and the running state call for it`},
		{"hash", func(p *Plan) { change(p, "db").Hash = "sha256:x" },
			`bad plan: changes[1] is replace db, but its spec and the running state give replace db (hash "sha256:x", want "`},
		{"cause", func(p *Plan) { change(p, "api").Cause = []string{"api"} },
			`bad plan: changes[0] is restart api, but its spec and the running state give restart api (cause [api], want [api db])`},
		{"waves", func(p *Plan) { p.Waves[0], p.Waves[1] = p.Waves[1], p.Waves[0] }, `bad plan: its waves are not the ones its steps make`},
		{"summary", func(p *Plan) { p.Summary.Keep = 7 }, `bad plan: its summary {Start:0 Stop:1 Replace:1 Restart:1 Keep:7 Reload:0 Update:0 Steps:5 Waves:4} does not count`},
	}
}

// TestVerifyStepsAlone: apply.Run's verification, without a spec, refuses what
// would leave a step never begun.
func TestVerifyStepsAlone(t *testing.T) {
	p := &Plan{Steps: []Step{
		{ID: "stop:a", Op: OpStop, Plugin: "a"},
		{ID: "start:a", Op: OpStart, Plugin: "a", After: After("stop:a")},
	}}
	require.NoError(t, p.VerifySteps())
	p.Steps[0].After = After("start:a")
	require.EqualError(t, p.VerifySteps(), "bad plan: step stop:a: its steps wait on each other in a cycle: stop:a → start:a → stop:a")
	p.Steps[0].After = After("start:b")
	require.EqualError(t, p.VerifySteps(), `bad plan: step stop:a: waits on "start:b", which is not a step of the plan`)
}
