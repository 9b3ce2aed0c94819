// Package bench holds graft's benchmarks and the inputs they share; the
// figures they produce are recorded in bench/README.md.
package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Spec writes a plugins.yaml of n local plugins with edges uses edges in
// all, each pointing from a plugin to one declared before it, so the graph
// is acyclic. version is baked into one in every changeEvery commands
// (0: none), so two versions of one size differ in a known share of
// plugins. The same arguments give the same file.
func Spec(n, edges int, version, changeEvery int) []byte {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(edges)))
	uses := make([][]int, n)
	for e := 0; e < edges && n > 1; {
		from := 1 + rng.IntN(n-1)
		to := rng.IntN(from)
		if !contains(uses[from], to) {
			uses[from] = append(uses[from], to)
			e++
		}
	}
	var b strings.Builder
	b.Grow(n * 120)
	b.WriteString("name: bench\nplugins:\n")
	for i := range n {
		v := 0
		if changeEvery > 0 && i%changeEvery == 0 {
			v = version
		}
		fmt.Fprintf(&b, "  p%05d:\n    command: [./bin/p, --id, \"%d\", --v, \"%d\"]\n", i, i, v)
		if len(uses[i]) > 0 {
			b.WriteString("    uses: [")
			for j, u := range uses[i] {
				if j > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "p%05d", u)
			}
			b.WriteString("]\n")
		}
	}
	return []byte(b.String())
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
