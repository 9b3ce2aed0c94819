package plan

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/graftland/graft/spec"
)

// Diff compares the desired spec with what runs, classifies every plugin of
// either (docs/plan-format.md, "Changes"), and builds the graph of steps
// that turns one into the other. A nil running state is the empty one.
func Diff(desired *spec.Spec, running *State) (*Plan, error) {
	return DiffWith(desired, running, Options{})
}

// Options change what Diff plans.
type Options struct {
	// Replace names desired plugins to replace though unchanged, as
	// graft restart does; their consumers restart as for any replacement.
	Replace []string
}

// DiffWith is Diff with options.
func DiffWith(desired *spec.Spec, running *State, opt Options) (*Plan, error) {
	if running == nil {
		running = &State{}
	}
	if err := running.Validate(); err != nil {
		return nil, fmt.Errorf("running state: %w", err)
	}
	var replace []string
	for _, name := range opt.Replace {
		named := desired.Named(name) // a plugin with replicas: each of them
		if len(named) == 0 {
			return nil, fmt.Errorf("restart %s: no such plugin in %s", name, filepath.Base(desired.File))
		}
		replace = append(replace, named...)
	}
	d := newDiffer(desired, running)
	d.replace = replace
	order := d.topological()
	for _, i := range order {
		d.classify(i)
	}
	for i, name := range d.names {
		if r, ok := d.running[name]; ok && desired.Plugins[name] == nil {
			reason := "not in " + filepath.Base(desired.File)
			switch r.Status {
			case Failed:
				reason += " (failed: nothing runs)"
			case Unconfirmed:
				reason += " (" + unconfirmedReason(r) + ")"
			}
			d.changes[i] = Change{Plugin: name, Action: Stop, Reason: reason, Run: r.Run, Status: r.Status}
		}
	}
	for _, i := range order {
		d.restart(i)
		d.order(i) // in topological order: a consumer's restart sees it
	}
	d.closes()
	p := &Plan{
		Format:  Format,
		Project: desired.Name,
		Changes: d.changes,
		Desired: desired.Digest(),
		State:   running.Digest(),
		KeyID:   desired.KeyID(),
	}
	for _, c := range p.Changes {
		p.Summary.add(c.Action)
	}
	var err error
	if p.Steps, p.Waves, err = d.graph(); err != nil {
		return nil, err
	}
	p.Summary.Steps, p.Summary.Waves = len(p.Steps), len(p.Waves)
	return p, nil
}

// differ holds one Diff under way. Plugins are numbered by name, so the
// plan of ten thousand plugins that CI may ask for is made with slices.
type differ struct {
	desired *spec.Spec
	running map[string]*Record // into the State's slice
	names   []string           // every plugin desired or running, sorted
	index   map[string]int     // names[index[n]] == n
	uses    [][]int            // the desired uses of each plugin
	changes []Change           // by plugin number
	replace []string           // plugins to replace though unchanged
}

func newDiffer(desired *spec.Spec, running *State) *differ {
	d := &differ{desired: desired, running: make(map[string]*Record, len(running.Plugins))}
	names := make([]string, 0, len(desired.Plugins)+len(running.Plugins))
	for name := range desired.Plugins {
		names = append(names, name)
	}
	for i := range running.Plugins {
		r := &running.Plugins[i]
		d.running[r.Name] = r
		if desired.Plugins[r.Name] == nil {
			names = append(names, r.Name)
		}
	}
	slices.Sort(names)
	d.names = names
	d.index = make(map[string]int, len(names))
	for i, name := range names {
		d.index[name] = i
	}
	d.uses = make([][]int, len(names))
	for i, name := range names {
		if p := desired.Plugins[name]; p != nil {
			for _, u := range p.Uses {
				d.uses[i] = append(d.uses[i], d.index[u])
			}
		}
	}
	d.changes = make([]Change, len(names))
	return d
}

// classify decides start, replace or (for now) keep for desired plugin i.
func (d *differ) classify(i int) {
	name := d.names[i]
	p := d.desired.Plugins[name]
	c := &d.changes[i]
	*c = Change{Plugin: name, Action: Keep, Reason: "unchanged", Run: p.Run, Hash: d.desired.Hash(name)}
	r, ok := d.running[name]
	if !ok {
		c.Action, c.Reason = Start, "new"
		return
	}
	c.Status = r.Status
	changed := r.Hash != c.Hash
	if changed {
		c.Fields = changedFields(spec.FieldDigests(d.desired.Fields(name)), r.Fields)
	}
	switch {
	case r.Status == Failed:
		c.Action, c.Reason = Start, "failed"
		if r.LastError != "" {
			c.Reason += ": " + firstLine(r.LastError)
		}
		if changed {
			c.Reason += "; " + describeChange(r, p, c.Fields)
		}
	case changed:
		c.Action, c.Reason = d.changeAction(r, p, c.Fields)
		if r.Status == Unconfirmed {
			c.Reason += "; " + unconfirmedReason(r)
		}
	case r.Status == Unconfirmed:
		c.Action, c.Reason = Replace, unconfirmedReason(r)+"; its exit must be confirmed before it starts again"
	case slices.Contains(d.replace, name):
		c.Action, c.Reason = Replace, "restart requested"
		if r.Status == Completed {
			c.Reason = "run again on request"
		}
	case r.Status == Completed:
		c.Reason = "completed"
	}
}

// unconfirmedReason says what is known of a plugin whose end no one
// confirmed: never that nothing runs.
func unconfirmedReason(r *Record) string {
	if r.Run.Traits().Runner {
		return "unconfirmed: it may still run on " + r.Where()
	}
	return "unconfirmed: it may still be running"
}

// order makes plugin i's replace or restart start-first when its desired
// spec says so and it runs: a plugin that failed, or whose end is not
// confirmed, has no process to keep serving beside the new one.
func (d *differ) order(i int) {
	c := &d.changes[i]
	p, r := d.desired.Plugins[c.Plugin], d.running[c.Plugin]
	if (c.Action == Replace || c.Action == Restart) && p != nil && p.StartsFirst() && r != nil && (r.Status == Running || r.Status == Starting) && r.Run == p.Run {
		c.Order = spec.StartFirst
	}
}

// restart turns kept plugin i into a restart when a plugin it uses is
// started, replaced or restarted. Called in topological order, so its
// providers are decided already.
func (d *differ) restart(i int) {
	c := &d.changes[i]
	if !actionOf(c.Action).keepsProcess() {
		return
	}
	// The cause is the provider with the shortest chain, the first by name
	// among equals.
	via := -1
	for _, u := range d.uses[i] {
		pc := &d.changes[u]
		if pc.consumers() != restartsConsumers || d.newlyUsed(i, u) || !d.rerun(i, u) {
			continue
		}
		if via < 0 || len(pc.Cause) < len(d.changes[via].Cause) || len(pc.Cause) == len(d.changes[via].Cause) && u < via {
			via = u
		}
	}
	if via < 0 {
		return
	}
	if vc := &d.changes[via]; vc.Action == Restart {
		c.Cause = append([]string{c.Plugin}, vc.Cause...)
	} else {
		c.Cause = []string{c.Plugin, vc.Plugin}
	}
	root := &d.changes[d.index[c.Cause[len(c.Cause)-1]]]
	c.Action = Restart
	c.Reason = root.Plugin + " is " + actionOf(root.Action).past
	if len(c.Cause) > 2 {
		c.Reason += " (through " + strings.Join(c.Cause[1:len(c.Cause)-1], " → ") + ")"
	}
}

// rerun reports whether a change of provider u restarts plugin i. It
// does, unless i is a one-shot that has completed: that runs again only
// when it waits for u to complete, that is when u is a one-shot that runs
// again. A migration that used a database is not run again because the
// database was replaced (docs/semantics.md, "One-shot plugins").
func (d *differ) rerun(i, u int) bool {
	r := d.running[d.names[i]]
	if r == nil || r.Status != Completed {
		return true
	}
	return d.desired.Plugins[d.names[i]].Condition(d.names[u]) == spec.UntilCompleted
}

// topological orders the desired plugins providers first, by name among
// equals (Kahn's algorithm). The spec has no cycles: validation rejects
// them.
func (d *differ) topological() []int {
	waiting := make([]int, len(d.names))
	consumers := make([][]int, len(d.names))
	var ready []int
	for i, name := range d.names {
		if d.desired.Plugins[name] == nil {
			continue
		}
		waiting[i] = len(d.uses[i])
		for _, u := range d.uses[i] {
			consumers[u] = append(consumers[u], i)
		}
		if waiting[i] == 0 {
			ready = append(ready, i)
		}
	}
	order := make([]int, 0, len(d.desired.Plugins))
	for len(ready) > 0 {
		i := ready[0]
		ready = ready[1:]
		order = append(order, i)
		for _, c := range consumers[i] {
			if waiting[c]--; waiting[c] == 0 {
				ready = append(ready, c)
			}
		}
	}
	return order
}

// changedFields lists the fields whose digests differ. When a whole block
// such as elect or ready comes or goes, only the block is named.
func changedFields(desired, running map[string]string) []string {
	if running == nil {
		return nil // a state without field digests: only the hash is known
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(joinKeys(desired, running))) {
		if desired[k] == running[k] {
			continue
		}
		if parent, _, nested := strings.Cut(k, "."); nested && desired[parent] != running[parent] {
			continue
		}
		out = append(out, k)
	}
	return out
}

func joinKeys(a, b map[string]string) map[string]bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}

// describeChange says what changed between the running plugin and the
// desired one, naming a change of placement first.
func describeChange(r *Record, p *spec.Plugin, fields []string) string {
	var parts []string
	if r.Run != "" && r.Run != p.Run {
		parts = append(parts, fmt.Sprintf("run %s → %s", r.Run, p.Run))
		fields = slices.DeleteFunc(slices.Clone(fields), func(f string) bool { return f == "run" })
	}
	if len(fields) > 0 {
		parts = append(parts, "changed "+strings.Join(fieldLabels(p, fields), ", "))
	}
	if len(parts) == 0 {
		return "spec changed"
	}
	return strings.Join(parts, "; ")
}

// firstLine shortens a last error to its first line and 100 characters,
// for one line of a plan.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 100 {
		s = string(r[:97]) + "..."
	}
	return s
}

// add counts a change of action a; an action no row has is not counted.
func (s *Summary) add(a Action) {
	if r := actionOf(a); r != nil {
		*r.count(s)++
	}
}

// closes names, on the change of the first running plugin that holds it,
// each held socket that no desired plugin of its key lists any more: the
// apply closes it.
func (d *differ) closes() {
	kept := map[string]bool{}
	for _, p := range d.desired.Plugins {
		for _, s := range sockets(p) {
			kept[p.SocketKey()+"\x00"+address(s)] = true
		}
	}
	named := map[string]bool{}
	for i, name := range d.names {
		r := d.running[name]
		if r == nil || r.SocketKey == "" {
			continue
		}
		for _, s := range r.Sockets {
			key := r.SocketKey + "\x00" + address(s)
			if kept[key] || named[key] {
				continue
			}
			named[key] = true
			c := &d.changes[i]
			c.Closes = append(c.Closes, s)
			c.Reason += "; closes socket " + s
		}
	}
}

// address is the address of a socket as a Record lists it.
func address(s string) string {
	_, a, _ := strings.Cut(s, " ")
	return a
}
