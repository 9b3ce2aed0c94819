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
// that hold a cycle, each sorted (Tarjan's algorithm). It works on the
// plugins' numbers in plugins, since a large file has thousands.
func components(s *Spec, plugins []string) [][]string {
	number := make(map[string]int, len(plugins))
	for i, name := range plugins {
		number[name] = i
	}
	uses := make([][]int, len(plugins))
	for i, name := range plugins {
		for _, u := range s.uses(name) {
			uses[i] = append(uses[i], number[u])
		}
	}
	index, low := make([]int, len(plugins)), make([]int, len(plugins)) // index 0: not visited yet
	onStack := make([]bool, len(plugins))
	var stack []int
	var out [][]string
	visited := 0
	var visit func(v int)
	visit = func(v int) {
		visited++
		index[v], low[v] = visited, visited
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range uses[v] {
			if index[w] == 0 {
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
			comp = append(comp, plugins[w])
			if w == v {
				break
			}
		}
		if len(comp) > 1 || slices.Contains(uses[v], v) {
			slices.Sort(comp)
			out = append(out, comp)
		}
	}
	for v := range plugins {
		if index[v] == 0 {
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
