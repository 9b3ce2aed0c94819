//go:build unix

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
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/graftland/graft/bench"
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
	var floor, load, floorCPU, loadCPU []time.Duration
	for range *rounds {
		start, cpu := time.Now(), cpuTime()
		bare(data)
		floor, floorCPU = append(floor, time.Since(start)), append(floorCPU, cpuTime()-cpu)
		start, cpu = time.Now(), cpuTime()
		if _, err := spec.Load(*file); err != nil {
			log.Fatal(err)
		}
		load, loadCPU = append(load, time.Since(start)), append(loadCPU, cpuTime()-cpu)
	}
	f, l := bench.Median(floor), bench.Median(load)
	fmt.Printf("spec.Load: median %v (%v–%v), CPU %v; bare yaml.v3 parse: median %v (%v–%v), CPU %v; over %d rounds\n",
		ms(l), ms(slices.Min(load)), ms(slices.Max(load)), ms(bench.Median(loadCPU)),
		ms(f), ms(slices.Min(floor)), ms(slices.Max(floor)), ms(bench.Median(floorCPU)), *rounds)
	fmt.Printf("load is %.2f× the bare YAML parse (CPU: %.2f×), and %.2f× the 150 ms target\n",
		float64(l)/float64(f), float64(bench.Median(loadCPU))/float64(bench.Median(floorCPU)), float64(l)/float64(150*time.Millisecond))
}

// cpuTime is the CPU time this process has used, user and system: on a
// busy machine it varies less than the time on the clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bare parses data as any program reading the file with yaml.v3 would.
func bare(data []byte) {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		log.Fatal(err)
	}
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }
