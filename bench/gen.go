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
	return SpecWith(n, edges, version, changeEvery, Shape{})
}

// Shape is what a generated file holds beyond its commands and uses.
type Shape struct {
	// MinEnv and MaxEnv bound the number of env entries of each plugin,
	// drawn evenly between them (0 and 0: no env), from envNames, with
	// values of the kinds a service's env has: a level, a port, a URL with
	// a port (a colon in the value), a flag, a number, a name.
	MinEnv, MaxEnv int
}

// envNames are the variables a generated plugin's env draws from.
var envNames = []string{
	"LOG_LEVEL", "PORT", "DATABASE_URL", "CACHE_ADDR", "FEATURE_NEW_UI",
	"GOMAXPROCS", "SERVICE_NAME", "OTEL_EXPORTER_OTLP_ENDPOINT",
}

// SpecWith is Spec with the plugins shaped by shape. With a zero Shape it
// is Spec, byte for byte: the env is drawn from a generator of its own, so
// the uses edges are those of Spec with the same arguments.
func SpecWith(n, edges int, version, changeEvery int, shape Shape) []byte {
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
	envRNG := rand.New(rand.NewPCG(uint64(n), uint64(edges)+1))
	var b strings.Builder
	b.Grow(n * (120 + 40*shape.MaxEnv))
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
		writeEnv(&b, envRNG, i, shape)
	}
	return []byte(b.String())
}

// writeEnv writes plugin i's env, in block style, when shape gives it one.
func writeEnv(b *strings.Builder, rng *rand.Rand, i int, shape Shape) {
	count := shape.MinEnv
	if shape.MaxEnv > shape.MinEnv {
		count += rng.IntN(shape.MaxEnv - shape.MinEnv + 1)
	}
	count = min(count, len(envNames))
	if count <= 0 {
		return
	}
	b.WriteString("    env:\n")
	for _, k := range rng.Perm(len(envNames))[:count] {
		name := envNames[k]
		fmt.Fprintf(b, "      %s: ", name)
		switch name {
		case "LOG_LEVEL":
			b.WriteString([]string{"debug", "info", "warn"}[rng.IntN(3)])
		case "PORT":
			fmt.Fprintf(b, "\"%d\"", 20000+i)
		case "DATABASE_URL":
			fmt.Fprintf(b, "postgres://app@db-%d.internal:5432/p%05d?sslmode=require", rng.IntN(8), i)
		case "CACHE_ADDR":
			fmt.Fprintf(b, "10.0.%d.%d:6379", rng.IntN(4), 1+rng.IntN(250))
		case "FEATURE_NEW_UI":
			fmt.Fprintf(b, "\"%t\"", rng.IntN(2) == 0)
		case "GOMAXPROCS":
			fmt.Fprintf(b, "\"%d\"", 1+rng.IntN(4))
		case "SERVICE_NAME":
			fmt.Fprintf(b, "p%05d", i)
		default:
			fmt.Fprintf(b, "http://otel-%d.internal:4318", rng.IntN(3))
		}
		b.WriteByte('\n')
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
