package plan

import (
	"strings"

	"github.com/graftland/graft/spec"
)

// This file is the one table of what a plan does: a row per action and a
// row per op. The differ (Summary.add, restart), the step graph, Verify and
// the text and Markdown forms read it; none of them names an action or an
// op but where it decides one (docs/plan-format.md, "Changes" and
// "Steps").
//
// To add an action:
//   - add its constant below and its row to actionTable, at the place the
//     summary line and the text form list it (Actions is that order);
//   - add its count to Summary (plan.go), with the action's name as its
//     JSON name, and omitempty if the row is optional in the summary: the
//     fields of Summary keep their order, so add it where plans have no
//     field yet, after Update;
//   - make the differ choose it (classify in diff.go, or changeAction in
//     inplace.go): when to plan it is the one thing a row cannot say;
//   - document it in docs/plan-format.md, "Changes".
//
// An action that needs an op no row has adds the op's constant and its
// row to opTable (a slot, and the plugins it may be a step of), and its
// carrier to apply's table (apply/ops.go), with the executor method that
// carries it out. TestActionTable checks the rows against each other and
// against Summary's JSON form.

// Action is what a plan does with one plugin (docs/plan-format.md,
// "Changes").
type Action string

// The actions.
const (
	Start   Action = "start"   // desired and not running, or failed
	Stop    Action = "stop"    // running and no longer desired
	Replace Action = "replace" // desired and running with a different spec
	Restart Action = "restart" // unchanged, but a plugin it uses is replaced, restarted or started
	Keep    Action = "keep"    // unchanged and running
	// Reload and Update change a running plugin without a restart
	// (inplace.go): its instance, pid and generation stay. Reload sends
	// the plugin its reloadSignal: a file of it with onChange: reload
	// changed (and perhaps in-place fields).
	Reload Action = "reload"
	// Update changes only what shapes graft's handling of the process
	// (inPlaceField): its supervisor takes the new settings.
	Update Action = "update"
)

// Op is what a step does.
type Op string

// The operations of steps.
const (
	OpStop   Op = "stop"
	OpStart  Op = "start"
	OpReload Op = "reload" // the step of a Reload
	OpUpdate Op = "update" // the step of an Update
	// OpSwap is the one step of a start-first replace or restart: the new
	// process starts beside the old one, which stops once it is ready.
	OpSwap Op = "swap"
)

// actionRow is everything about one action but when the differ plans it.
type actionRow struct {
	action Action
	// marker and color mark its changes in the text and Markdown forms
	// (Terraform's markers where it has one); color is an ANSI SGR code,
	// "" for none.
	marker, color string
	// past is what a restart's reason says its cause underwent: "db is
	// replaced".
	past string
	// ops are the steps it calls for, in the order they run: each waits
	// on the one before it (a replace stops, then starts). No two take
	// the same slot.
	ops []Op
	// consumers says whether the consumers of its plugin restart.
	consumers consumers
	// count is where Summary counts it, and tally what the summary line
	// says of the count: "2 to start".
	count func(*Summary) *int
	tally string
	// shown says whether the summary (its JSON form and its line) has it
	// when zero.
	shown shown
}

// consumers is what an action does to the consumers of its plugin.
type consumers bool

const (
	restartsConsumers consumers = true  // its process is new: theirs restart
	leavesConsumers   consumers = false // they go on with it as they are
)

// shown is when the summary has an action's count.
type shown bool

const (
	alwaysShown  shown = true
	shownNonZero shown = false // plans before it had none: omitempty in JSON
)

// actionTable is every action, in the order the summary line and the text
// form list them.
var actionTable = []actionRow{
	{Start, "+", "32", "started", []Op{OpStart}, restartsConsumers, func(s *Summary) *int { return &s.Start }, "to start", alwaysShown},
	{Replace, "~", "33", "replaced", []Op{OpStop, OpStart}, restartsConsumers, func(s *Summary) *int { return &s.Replace }, "to replace", alwaysShown},
	{Reload, "⟳", "35", "reloaded", []Op{OpReload}, leavesConsumers, func(s *Summary) *int { return &s.Reload }, "to reload", shownNonZero},
	{Update, "*", "35", "updated", []Op{OpUpdate}, leavesConsumers, func(s *Summary) *int { return &s.Update }, "to update in place", shownNonZero},
	{Restart, "↻", "36", "restarted", []Op{OpStop, OpStart}, restartsConsumers, func(s *Summary) *int { return &s.Restart }, "to restart", alwaysShown},
	{Stop, "-", "31", "stopped", []Op{OpStop}, leavesConsumers, func(s *Summary) *int { return &s.Stop }, "to stop", alwaysShown},
	{Keep, " ", "", "kept", nil, leavesConsumers, func(s *Summary) *int { return &s.Keep }, "unchanged", alwaysShown},
}

// opRow is one op: where its step sits in the step graph, and which
// plugins it may be a step of.
type opRow struct {
	op Op
	// slot is the node of its plugin it takes in the graph (graph.go):
	// stops are listed before starts in a wave, and a start slot waits on
	// its plugin's providers.
	slot int
	on   target
}

// The slots of a plugin's nodes in the step graph.
const (
	stopSlot  = 0
	startSlot = 1
)

// target is which plugins an op may be a step of (Verify).
type target int

const (
	desiredPlugin target = iota // a plugin of the plan's spec
	knownPlugin                 // one that runs or is in the spec
	runningPlugin               // one that runs and stays in the spec: the op changes it in place
)

// opTable is every op, in the order messages list them.
var opTable = []opRow{
	{OpStop, stopSlot, knownPlugin},
	{OpStart, startSlot, desiredPlugin},
	{OpReload, startSlot, runningPlugin},
	{OpUpdate, startSlot, runningPlugin},
	{OpSwap, startSlot, desiredPlugin},
}

// Actions lists every action, in the order the summary lists them.
var Actions = func() []Action {
	out := make([]Action, len(actionTable))
	for i, r := range actionTable {
		out[i] = r.action
	}
	return out
}()

// Ops lists every op of a step.
var Ops = func() []Op {
	out := make([]Op, len(opTable))
	for i, r := range opTable {
		out[i] = r.op
	}
	return out
}()

var (
	actionRows = indexRows(actionTable, func(r *actionRow) Action { return r.action })
	opRows     = indexRows(opTable, func(r *opRow) Op { return r.op })
	// opChoice names the ops for a message: "stop, start, reload or update".
	opChoice = orList(Ops)
)

func indexRows[K comparable, R any](rows []R, key func(*R) K) map[K]*R {
	m := make(map[K]*R, len(rows))
	for i := range rows {
		m[key(&rows[i])] = &rows[i]
	}
	return m
}

// actionOf is the row of action a; nil for an action no row has.
func actionOf(a Action) *actionRow { return actionRows[a] }

// opOf is the row of op o; nil for an op no row has.
func opOf(o Op) *opRow { return opRows[o] }

// listedActions are the rows of the actions the text and Markdown forms
// list, in their order.
func listedActions() []*actionRow {
	var out []*actionRow
	for i := range actionTable {
		if r := &actionTable[i]; r.listed() {
			out = append(out, r)
		}
	}
	return out
}

// listed reports whether the text and Markdown forms list the changes of
// r: an action that calls for no step (keep) is left to the summary.
func (r *actionRow) listed() bool { return len(r.ops) > 0 }

// inPlace reports whether r changes a running plugin without a restart:
// it has steps, and each changes the plugin in place.
func (r *actionRow) inPlace() bool { return r.listed() && r.keepsProcess() }

// keepsProcess reports whether the process r's plugin runs goes on: none
// of its steps stops or starts it (keep, reload, update). Such an action
// becomes a restart when a provider's action restarts consumers.
func (r *actionRow) keepsProcess() bool {
	for _, o := range r.ops {
		if opOf(o).on != runningPlugin {
			return false
		}
	}
	return true
}

// slotOp is r's op that takes slot, or "" when none does.
func (r *actionRow) slotOp(slot int) Op {
	for _, o := range r.ops {
		if opOf(o).slot == slot {
			return o
		}
	}
	return ""
}

// ops are the steps c calls for: its action's, but one swap for a
// start-first replace or restart.
func (c *Change) ops() []Op {
	if c.swaps() {
		return []Op{OpSwap}
	}
	return actionOf(c.Action).ops
}

// swaps reports whether c is a start-first replace or restart.
func (c *Change) swaps() bool {
	return c.Order == spec.StartFirst && (c.Action == Replace || c.Action == Restart)
}

// orderNote is what the text forms add to c's plugin: " (start-first)"
// for a swap.
func (c *Change) orderNote() string {
	if c.swaps() {
		return " (start-first)"
	}
	return ""
}

// consumers is what c does to the consumers of its plugin: a start-first
// replacement leaves them, since its plugin never stops serving.
func (c *Change) consumers() consumers {
	if c.swaps() {
		return leavesConsumers
	}
	return actionOf(c.Action).consumers
}

// orList joins ops as "a, b or c".
func orList(ops []Op) string {
	s := make([]string, len(ops))
	for i, o := range ops {
		s[i] = string(o)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
