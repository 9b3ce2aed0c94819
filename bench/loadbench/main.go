// Command loadbench measures spec.Load of a plugins file beside its floor,
// a bare yaml.v3 parse of the same file into a yaml.Node, interleaved in
// one process (floor, load, floor, load ...), and prints the medians and
// their ratio. With -yaml it parses the file once with yaml.v3 and exits:
// bench/plan.sh times that process as the floor of a graft command's.
//
//	go run ./bench/loadbench -file plugins.yaml -rounds 10
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/graftland/graft/spec"
)

func main() {
	file := flag.String("file", "plugins.yaml", "the plugins file")
	rounds := flag.Int("rounds", 10, "rounds; the medians are reported")
	once := flag.Bool("yaml", false, "parse the file once with yaml.v3, print nothing, and exit")
	flag.Parse()
	data, err := os.ReadFile(*file)
	if err != nil {
		log.Fatal(err)
	}
	if *once {
		bare(data)
		return
	}
	var floor, load []time.Duration
	for range *rounds {
		start := time.Now()
		bare(data)
		floor = append(floor, time.Since(start))
		start = time.Now()
		if _, err := spec.Load(*file); err != nil {
			log.Fatal(err)
		}
		load = append(load, time.Since(start))
	}
	f, l := median(floor), median(load)
	fmt.Printf("spec.Load: median %v (%v–%v); bare yaml.v3 parse: median %v (%v–%v); over %d rounds\n",
		ms(l), ms(slices.Min(load)), ms(slices.Max(load)), ms(f), ms(slices.Min(floor)), ms(slices.Max(floor)), *rounds)
	fmt.Printf("load is %.2f× the bare YAML parse, and %.2f× the 150 ms target\n",
		float64(l)/float64(f), float64(l)/float64(150*time.Millisecond))
}

// bare parses data as any program reading the file with yaml.v3 would.
func bare(data []byte) {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		log.Fatal(err)
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	return s[len(s)/2]
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }
