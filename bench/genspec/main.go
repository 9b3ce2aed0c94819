// Command genspec writes a large plugins.yaml for benchmarks, and the
// running state of an older version of it, to measure `graft plan`:
//
//	go run ./bench/genspec -plugins 10000 -edges 30000 -out big.yaml -state big.state.json
//
// With -env-min and -env-max each plugin also has an env of that many
// entries (bench.Shape):
//
//	go run ./bench/genspec -plugins 10000 -edges 30000 -env-min 3 -env-max 5 -out env.yaml
package main

import (
	"encoding/json"
	"flag"
	"log"
	"os"

	"github.com/graftland/graft/bench"
	"github.com/graftland/graft/spec"
)

func main() {
	n := flag.Int("plugins", 10000, "number of plugins")
	edges := flag.Int("edges", 30000, "number of uses edges")
	every := flag.Int("change-every", 100, "the state runs an older version of one plugin in this many")
	out := flag.String("out", "plugins.yaml", "the plugins file to write")
	state := flag.String("state", "", "also write the running state of the older version here")
	var shape bench.Shape
	flag.IntVar(&shape.MinEnv, "env-min", 0, "the fewest env entries of a plugin")
	flag.IntVar(&shape.MaxEnv, "env-max", 0, "the most env entries of a plugin (at least -env-min)")
	flag.Parse()
	if shape.MaxEnv < shape.MinEnv {
		log.Fatalf("-env-max %d is below -env-min %d", shape.MaxEnv, shape.MinEnv)
	}

	if err := os.WriteFile(*out, bench.SpecWith(*n, *edges, 2, *every, shape), 0o644); err != nil {
		log.Fatal(err)
	}
	if *state == "" {
		return
	}
	old, err := spec.Parse(*out, bench.SpecWith(*n, *edges, 1, *every, shape))
	if err != nil {
		log.Fatal(err)
	}
	b, err := json.Marshal(bench.Status(old))
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*state, b, 0o644); err != nil {
		log.Fatal(err)
	}
}
