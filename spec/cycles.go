package spec

import (
	"fmt"
	"slices"
	"strings"
)

// cycles reports each uses cycle once, as its shortest loop through the
// alphabetically first plugin on it, at that plugin's uses entry.
func (d *decoder) cycles(s *Spec, plugins []string) {
	for _, comp := range components(s, plugins) {
		start := comp[0]
		loop := shortestLoop(s, start, comp)
		if loop == nil {
			continue
		}
		i := slices.Index(s.Plugins[start].Uses, loop[1])
		path := fmt.Sprintf("plugins.%s.uses[%d]", start, i)
		d.errorf(d.at(path), path, "uses cycle: %s", strings.Join(loop, " → "))
	}
}

// components returns the strongly connected components of the uses graph
// that hold a cycle, each sorted (Tarjan's algorithm).
func components(s *Spec, plugins []string) [][]string {
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var out [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range s.uses(v) {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var comp []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			comp = append(comp, w)
			if w == v {
				break
			}
		}
		if len(comp) > 1 || slices.Contains(s.uses(v), v) {
			slices.Sort(comp)
			out = append(out, comp)
		}
	}
	for _, v := range plugins {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	return out
}

// shortestLoop finds, by breadth-first search inside comp, the shortest
// path start → ... → start.
func shortestLoop(s *Spec, start string, comp []string) []string {
	prev := map[string]string{}
	queue := []string{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range s.uses(v) {
			if w == start {
				loop := []string{start}
				for at := v; at != start; at = prev[at] {
					loop = append(loop, at)
				}
				slices.Reverse(loop[1:])
				return append(loop, start)
			}
			if _, seen := prev[w]; !seen && slices.Contains(comp, w) {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return nil
}

// uses lists the declared plugins that name uses, in file order.
func (s *Spec) uses(name string) []string {
	p := s.Plugins[name]
	if p == nil {
		return nil
	}
	var out []string
	for _, u := range p.Uses {
		if _, ok := s.Plugins[u]; ok {
			out = append(out, u)
		}
	}
	return out
}
