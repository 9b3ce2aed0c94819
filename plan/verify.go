package plan

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/graftland/graft/internal/errkind"

	"github.com/graftland/graft/spec"
)

// VerifyError is a plan refused before anything of it runs: its format, a
// step the plan rules do not allow, or steps other than the ones its spec
// and the running state give (docs/plan-format.md, "What a saved plan must
// satisfy").
type VerifyError struct {
	// Step is the id of the step at fault, when one is.
	Step string `json:"step,omitempty"`
	// Reason says what is wrong.
	Reason string `json:"reason"`
}

func (e *VerifyError) Error() string {
	if e.Step != "" {
		return fmt.Sprintf("bad plan: step %s: %s", e.Step, e.Reason)
	}
	return "bad plan: " + e.Reason
}

// Hint tells the operator what to do about it.
func (e *VerifyError) Hint() string {
	return "make a new plan with graft plan --out and apply it as it was saved: a saved plan is never edited"
}

// A refused plan crosses the host's API as kind "plan", with its fields
// (internal/errkind).
var _ = errkind.Type("plan", http.StatusBadRequest, (*VerifyError)(nil), true)

func badPlan(step, format string, args ...any) *VerifyError {
	return &VerifyError{Step: step, Reason: fmt.Sprintf(format, args...)}
}

// Verify reports, as a *VerifyError, the first reason p, a plan read from a
// file, is not the plan of desired against running, which the caller has
// tied to it by its digests. It checks the format and the step graph
// (VerifySteps), then each step and change against the spec and the state,
// and last that the steps, changes, waves and summary are exactly those
// Diff makes of them: Diff is deterministic and reads nothing of running
// that the state digest does not cover, so a plan made by graft always
// passes, and any other is refused before it does anything. The reasons
// of the changes are for people and may differ (a status that moved from
// starting to running does not make a plan stale).
func (p *Plan) Verify(desired *spec.Spec, running *State) error {
	if p.Format != Format {
		return badPlan("", "format %q, want %q", p.Format, Format)
	}
	if p.Project != desired.Name {
		return badPlan("", "project %q, but its spec's is %q", p.Project, desired.Name)
	}
	if err := p.VerifySteps(); err != nil {
		return err
	}
	if running == nil {
		running = &State{}
	}
	if err := p.checkPlugins(desired, running); err != nil {
		return err
	}
	want, err := Diff(desired, running)
	if err != nil {
		return badPlan("", "its spec and the running state cannot be planned: %v", err)
	}
	return p.same(want)
}

// VerifySteps checks p's step graph by itself: every step has a known op
// and the id StepID gives it, ids are unique, every step it waits on is a
// step of the plan (once, and not itself), and the graph has no cycle. A
// graph that passes has every step begun by apply.Run, or skipped.
func (p *Plan) VerifySteps() error {
	index := make(map[string]int, len(p.Steps))
	for i, s := range p.Steps {
		id := s.ID
		if id == "" {
			id = fmt.Sprintf("#%d", i+1)
		}
		switch {
		case opOf(s.Op) == nil:
			return badPlan(id, "unknown op %q: want %s", s.Op, opChoice)
		case s.Plugin == "":
			return badPlan(id, "no plugin")
		case s.ID != StepID(s.Op, s.Plugin):
			return badPlan(id, "its id does not match its op and plugin: want %q", StepID(s.Op, s.Plugin))
		}
		if _, dup := index[s.ID]; dup {
			return badPlan(id, "listed twice")
		}
		index[s.ID] = i
	}
	for _, s := range p.Steps {
		seen := make(map[string]bool, len(s.After))
		for _, e := range s.After {
			a := e.Step
			if e.Until != "" && (!slices.Contains(spec.Conditions, e.Until) || !strings.HasPrefix(a, string(OpStart)+":")) {
				return badPlan(s.ID, "waits on %s: a condition is on the start of a provider, one of started, ready, healthy, completed", e)
			}
			switch _, ok := index[a]; {
			case !ok:
				return badPlan(s.ID, "waits on %q, which is not a step of the plan", a)
			case a == s.ID:
				return badPlan(s.ID, "waits on itself")
			case seen[a]:
				return badPlan(s.ID, "waits on %s twice", a)
			}
			seen[a] = true
		}
	}
	if cycle := findCycle(p.Steps, index); cycle != nil {
		return badPlan(cycle[0], "its steps wait on each other in a cycle: %s", strings.Join(cycle, " → "))
	}
	return nil
}

// findCycle returns a cycle of the graph, as ids from a step back to it
// (each waiting on the next), or nil when there is none.
func findCycle(steps []Step, index map[string]int) []string {
	const (
		unseen = iota
		onPath
		finished
	)
	state := make([]int, len(steps))
	var path []int
	var visit func(i int) []string
	visit = func(i int) []string {
		state[i] = onPath
		path = append(path, i)
		for _, a := range steps[i].After {
			j := index[a.Step]
			switch state[j] {
			case onPath:
				at := slices.Index(path, j)
				var ids []string
				for _, k := range path[at:] {
					ids = append(ids, steps[k].ID)
				}
				return append(ids, steps[j].ID)
			case unseen:
				if c := visit(j); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = finished
		return nil
	}
	for i := range steps {
		if state[i] == unseen {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}

// checkPlugins checks each step and change against the spec and the
// state: a start only of a desired plugin, a stop only of one that runs or
// is desired, one change for every plugin of either, and the steps each
// change's action calls for.
func (p *Plan) checkPlugins(desired *spec.Spec, running *State) error {
	runs := make(map[string]bool, len(running.Plugins))
	for _, r := range running.Plugins {
		runs[r.Name] = true
	}
	ops := map[string][]Op{}
	for _, s := range p.Steps {
		switch on := opOf(s.Op).on; { // VerifySteps has seen every op is known
		case on == desiredPlugin && desired.Plugins[s.Plugin] == nil:
			return badPlan(s.ID, "starts %s, which is not in the plan's spec (%s)", s.Plugin, desired.File)
		case on == knownPlugin && desired.Plugins[s.Plugin] == nil && !runs[s.Plugin]:
			return badPlan(s.ID, "stops %s, which neither runs nor is in the plan's spec", s.Plugin)
		case on == runningPlugin && (desired.Plugins[s.Plugin] == nil || !runs[s.Plugin]):
			return badPlan(s.ID, "changes %s in place, which does not both run and stay in the plan's spec", s.Plugin)
		}
		ops[s.Plugin] = append(ops[s.Plugin], s.Op)
	}
	changed := map[string]bool{}
	for i, c := range p.Changes {
		where := fmt.Sprintf("changes[%d] (%s)", i, c.Plugin)
		switch {
		case changed[c.Plugin]:
			return badPlan("", "%s: the plugin has two changes", where)
		case desired.Plugins[c.Plugin] == nil && !runs[c.Plugin]:
			return badPlan("", "%s: the plugin neither runs nor is in the plan's spec", where)
		case actionOf(c.Action) == nil:
			return badPlan("", "%s: unknown action %q", where, c.Action)
		case !slices.Equal(stepsOf(c), sortedOps(ops[c.Plugin])):
			return badPlan("", "%s: a %s calls for %s, the plan has %s", where, c.Action, opList(stepsOf(c)), opList(sortedOps(ops[c.Plugin])))
		}
		changed[c.Plugin] = true
	}
	for name := range ops {
		if !changed[name] {
			return badPlan("", "steps for %s, but no change", name)
		}
	}
	for name := range desired.Plugins {
		if !changed[name] {
			return badPlan("", "no change for %s, a plugin of its spec", name)
		}
	}
	for name := range runs {
		if !changed[name] {
			return badPlan("", "no change for %s, which runs", name)
		}
	}
	return nil
}

// stepsOf lists the steps a change calls for, stops first.
func stepsOf(c Change) []Op { return sortedOps(c.ops()) }

func sortedOps(ops []Op) []Op {
	out := slices.Clone(ops)
	slices.SortFunc(out, func(a, b Op) int { return strings.Compare(string(b), string(a)) }) // stop before start
	return out
}

func opList(ops []Op) string {
	if len(ops) == 0 {
		return "no step"
	}
	var parts []string
	for _, o := range ops {
		parts = append(parts, string(o))
	}
	return strings.Join(parts, " and ")
}

// same reports the first difference between p and want, Diff's plan of
// the same spec and state, in what carrying it out or reading it depends
// on: the steps in their order with their edges, each change's plugin,
// action, hash and cause, the waves and the summary.
func (p *Plan) same(want *Plan) error {
	if err := sameSteps(p.Steps, want.Steps); err != nil {
		return err
	}
	if len(p.Changes) != len(want.Changes) {
		return badPlan("", "%d changes, but its spec and the running state give %d", len(p.Changes), len(want.Changes))
	}
	for i, c := range p.Changes {
		w := want.Changes[i]
		if c.Plugin != w.Plugin || c.Action != w.Action || c.Hash != w.Hash || !slices.Equal(c.Cause, w.Cause) {
			return badPlan("", "changes[%d] is %s %s, but its spec and the running state give %s %s%s",
				i, c.Action, c.Plugin, w.Action, w.Plugin, detail(c, w))
		}
	}
	if !slices.EqualFunc(p.Waves, want.Waves, slices.Equal) {
		return badPlan("", "its waves are not the ones its steps make")
	}
	if p.Summary != want.Summary {
		return badPlan("", "its summary %+v does not count its changes and steps: want %+v", p.Summary, want.Summary)
	}
	return nil
}

// detail names what else differs between two changes of one plugin and
// action.
func detail(c, w Change) string {
	switch {
	case c.Plugin != w.Plugin || c.Action != w.Action:
		return ""
	case c.Hash != w.Hash:
		return fmt.Sprintf(" (hash %q, want %q)", c.Hash, w.Hash)
	}
	return fmt.Sprintf(" (cause %v, want %v)", c.Cause, w.Cause)
}

// sameSteps reports the first difference between got and want, which
// have unique ids: a step want lacks, a step got lacks, a step that waits
// on other steps, or one out of order.
func sameSteps(got, want []Step) error {
	wanted := make(map[string]Step, len(want))
	for _, s := range want {
		wanted[s.ID] = s
	}
	has := make(map[string]bool, len(got))
	for _, s := range got {
		if _, ok := wanted[s.ID]; !ok {
			return badPlan(s.ID, "its spec and the running state call for no such step")
		}
		has[s.ID] = true
	}
	for _, w := range want {
		if !has[w.ID] {
			return badPlan(w.ID, "missing: its spec and the running state call for it")
		}
	}
	for i, s := range got {
		if w := wanted[s.ID]; !slices.Equal(s.After, w.After) {
			return badPlan(s.ID, "waits on %s, but the plan rules make it wait on %s", idList(s.After), idList(w.After))
		}
		if want[i].ID != s.ID {
			return badPlan(s.ID, "out of order: step %d of the plan of its spec and the running state is %s", i+1, want[i].ID)
		}
	}
	return nil
}

func idList(edges []Edge) string {
	if len(edges) == 0 {
		return "nothing"
	}
	ids := make([]string, len(edges))
	for i, e := range edges {
		ids[i] = e.String()
	}
	return "[" + strings.Join(ids, ", ") + "]"
}
