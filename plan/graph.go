package plan

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/graftland/graft/spec"
)

// StepID names the step that does op to plugin, as in "stop:api".
func StepID(op Op, plugin string) string { return string(op) + ":" + plugin }

// graph builds the steps and their order (docs/plan-format.md, "Steps"):
//   - an edge from a start to a provider's start carries the condition of
//     the consumer's uses entry, unless it is ready, the default;
//   - stop X waits for stop C of every running consumer C of X, so
//     consumers stop while X still serves them;
//   - start X waits for start P of every desired provider P of X;
//   - each step of X's action waits on the one before it (action.go):
//     start X waits for stop X when X is replaced or restarted;
//   - nothing else is ordered, so independent branches run side by side.
//
// It works on numbered plugins, the stop slot of plugin i being node 2i
// and its start slot 2i+1 (each op takes one: action.go), since plans of
// ten thousand plugins are planned in CI.
func (d *differ) graph() ([]Step, [][]string, error) {
	names := d.names
	has := make([]bool, 2*len(names)) // has[node]: the plan has that step
	for i := range names {
		for _, o := range d.changes[i].ops() {
			has[node(i, o)] = true
		}
	}

	// Running consumers come from the records, not the desired spec: a
	// plugin that is removed, or whose uses change, is stopped in the
	// order it was started in.
	consumers := make([][]int, len(names))
	for _, r := range d.running {
		for _, u := range r.Uses {
			if j, ok := d.index[u]; ok {
				consumers[j] = append(consumers[j], d.index[r.Name])
			}
		}
	}

	after := make([][]int, 2*len(names))
	until := map[[2]int]spec.Condition{} // the condition of an edge, by [node, node it waits on]
	for i := range names {
		if has[stopNode(i)] {
			after[stopNode(i)] = d.nearestStops(i, consumers, has)
		}
		// Each step of the action waits on the one before it: a
		// replacement never overlaps.
		ops := d.changes[i].ops()
		for k := 1; k < len(ops); k++ {
			n := node(i, ops[k])
			after[n] = append(after[n], node(i, ops[k-1]))
		}
		if !has[startNode(i)] {
			continue
		}
		// A provider with no start step is kept, and so are all of its own
		// providers (else it would restart): direct edges are enough.
		for _, u := range d.uses[i] {
			if n := startNode(u); has[n] {
				after[startNode(i)] = append(after[startNode(i)], n)
				if c := d.desired.Plugins[names[i]].Condition(names[u]); c != spec.UntilReady {
					until[[2]int{startNode(i), n}] = c
				}
			}
		}
	}
	d.roll(after)
	return waves(names, has, after, until, d.op)
}

// roll orders the replacements of a plugin's running replicas
// (docs/semantics.md, "Replicas"): the first step of the k-th replaced
// waits on the last step of the one replaced parallel before it, so that
// at most parallel of them are out of service, or doubled, at once.
func (d *differ) roll(after [][]int) {
	groups := map[string][]int{}
	for i, c := range d.changes {
		p, r := d.desired.Plugins[c.Plugin], d.running[c.Plugin]
		if p == nil || p.Of == "" || r == nil || (c.Action != Replace && c.Action != Restart) || (r.Status != Running && r.Status != Starting) {
			continue
		}
		groups[p.Of] = append(groups[p.Of], i)
	}
	for _, chain := range groups {
		slices.SortFunc(chain, func(a, b int) int {
			return cmp.Compare(d.desired.Plugins[d.names[a]].Replica, d.desired.Plugins[d.names[b]].Replica)
		})
		par := d.desired.Plugins[d.names[chain[0]]].RollingParallel()
		for k := par; k < len(chain); k++ {
			i, j := chain[k], chain[k-par]
			first, last := d.changes[i].ops()[0], d.changes[j].ops()
			n := node(i, first)
			after[n] = append(after[n], node(j, last[len(last)-1]))
		}
	}
}

// op is the operation of node n: the op of its plugin's action that
// takes its slot (a reload or an update takes the start node).
func (d *differ) op(n int) Op {
	for _, o := range d.changes[n/2].ops() {
		if opOf(o).slot == n%2 {
			return o
		}
	}
	return ""
}

// node is the node of op o of plugin i.
func node(i int, o Op) int { return 2*i + opOf(o).slot }

func stopNode(i int) int  { return 2*i + stopSlot }
func startNode(i int) int { return 2*i + startSlot }

// nearestStops returns the stop nodes of the consumers of plugin i that
// have a stop step, looking through failed consumers, which have none, to
// theirs.
func (d *differ) nearestStops(i int, consumers [][]int, has []bool) []int {
	var out []int
	seen := map[int]bool{i: true}
	queue := []int{i}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, c := range consumers[v] {
			if seen[c] {
				continue
			}
			seen[c] = true
			if has[stopNode(c)] {
				out = append(out, stopNode(c))
			} else if a := actionOf(d.changes[c].Action); a.inPlace() {
				// Changed in place, it may no longer use i: once it has
				// its new uses, i stops without it.
				for _, o := range a.ops {
					out = append(out, node(c, o))
				}
			} else if d.running[d.names[c]].Status == Failed {
				queue = append(queue, c)
			}
		}
	}
	return out
}

// waves sorts the steps into waves, each step one wave after the latest
// step it waits on (Kahn's algorithm), and lists them in that order: by
// wave, stops before starts, then by plugin. A cycle can only come from a
// running state whose records use each other; it is an error.
func waves(names []string, has []bool, after [][]int, until map[[2]int]spec.Condition, op func(int) Op) ([]Step, [][]string, error) {
	order, wave, err := kahn(names, has, after)
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(wave[a]-wave[b], a%2-b%2, a/2-b/2) // wave, stops first, plugin
	})
	steps, ws := listSteps(names, order, wave, after, until, op)
	return steps, ws, nil
}

// kahn orders the nodes that has marks so that each comes after those it
// waits on, and gives each its wave: one after the latest of those. It
// fails on a cycle.
func kahn(names []string, has []bool, after [][]int) (order, wave []int, err error) {
	waiting := make([]int, len(has))
	next := make([][]int, len(has))
	wave = make([]int, len(has))
	var ready []int
	total := 0
	for n := range has {
		if !has[n] {
			continue
		}
		total++
		waiting[n] = len(after[n])
		for _, a := range after[n] {
			next[a] = append(next[a], n)
		}
		if len(after[n]) == 0 {
			ready = append(ready, n)
		}
	}
	for len(ready) > 0 {
		n := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		order = append(order, n)
		for _, m := range next[n] {
			wave[m] = max(wave[m], wave[n]+1)
			if waiting[m]--; waiting[m] == 0 {
				ready = append(ready, m)
			}
		}
	}
	if len(order) < total {
		for n := range has {
			if has[n] && waiting[n] > 0 {
				return nil, nil, fmt.Errorf("running state has a uses cycle through %s; its records cannot be stopped in order", names[n/2])
			}
		}
	}
	return order, wave, nil
}

// listSteps makes the steps of the nodes of order, in that order, each
// with the ids of the steps it waits on, and lists their ids by wave.
func listSteps(names []string, order, wave []int, after [][]int, until map[[2]int]spec.Condition, op func(int) Op) ([]Step, [][]string) {
	ids := make([]string, len(after))
	for _, n := range order {
		ids[n] = StepID(op(n), names[n/2])
	}
	steps := make([]Step, len(order))
	ws := [][]string{}
	for i, n := range order {
		s := &steps[i]
		s.ID, s.Op, s.Plugin = ids[n], op(n), names[n/2]
		s.After = make([]Edge, len(after[n]))
		for j, a := range after[n] {
			s.After[j] = Edge{Step: ids[a], Until: until[[2]int{n, a}]}
		}
		slices.SortFunc(s.After, func(a, b Edge) int { return cmp.Compare(a.Step, b.Step) })
		if wave[n] == len(ws) {
			ws = append(ws, nil)
		}
		ws[wave[n]] = append(ws[wave[n]], s.ID)
	}
	return steps, ws
}
