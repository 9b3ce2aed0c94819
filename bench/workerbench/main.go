//go:build linux

// Command workerbench starts N WebAssembly workers on graft's worker
// placement and, in the same run, N instances of the same module on bare
// wazero with the same settings (the floor, see floor), round after round,
// and reports the medians of how long starting and stopping them took and
// what they cost the host in memory, and graft's ratio to the floor; then
// N local processes for comparison. bench/worker.sh builds the module and
// runs it.
//
//	go run ./bench/workerbench -module worker.wasm -n 100 -rounds 5
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/local"
	"github.com/graftland/graft/runtime/worker"
	"github.com/graftland/graft/spec"
)

// args are the worker's: it works once an hour, so it idles.
var args = []string{"-every", "1h"}

func main() {
	module := flag.String("module", "", "the worker module (examples/worker built for wasip1)")
	n := flag.Int("n", 100, "instances of each kind")
	rounds := flag.Int("rounds", 5, "rounds of floor and graft, interleaved")
	withLocal := flag.Bool("local", true, "also start N local processes (sleep), once")
	flag.BoolVar(&wazeroMemory, "wazero-memory", false, "give the floor wazero's own linear memory (Go slices), not graft's")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the rounds to this file")
	flag.Parse()
	if *module == "" {
		log.Fatal("-module is required")
	}
	abs, err := filepath.Abs(*module)
	if err != nil {
		log.Fatal(err)
	}
	bin, err := os.ReadFile(abs)
	if err != nil {
		log.Fatal(err)
	}
	cacheDir, err := os.MkdirTemp("", "workerbench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(cacheDir)
	warm(cacheDir, abs) // the figures are of starts with a warm cache, as a host's are after the first

	fmt.Printf("%d instances a round; start: until each has written its first line; memory: the host's\n", *n)
	fmt.Printf("VmRSS once all run less before, each read after debug.FreeOSMemory (a GC that returns freed pages)\n")
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
	}
	fl, gr := interleave(*rounds, cacheDir, abs, bin, *n)
	pprof.StopCPUProfile()
	report(*n, fl, gr)
	if *withLocal {
		localRound(*n)
	}
}

// interleave runs rounds of the floor and of graft, one after the other.
func interleave(rounds int, cacheDir, module string, bin []byte, n int) (fl, gr []result) {
	for r := range rounds {
		// Which goes first alternates, so neither always runs after the other.
		if r%2 == 0 {
			fl = append(fl, roundFloor(cacheDir, bin, n))
			gr = append(gr, roundGraft(cacheDir, module, n))
		} else {
			gr = append(gr, roundGraft(cacheDir, module, n))
			fl = append(fl, roundFloor(cacheDir, bin, n))
		}
		fmt.Printf("round %d: floor %s | graft %s\n", r+1, fl[r], gr[r])
	}
	return fl, gr
}

// localRound starts n sleeps on the local placement, for comparison.
func localRound(n int) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		log.Fatal(err)
	}
	res := measure(n, local.New(local.Options{}), func(i int) *spec.Plugin {
		return &spec.Plugin{Name: fmt.Sprintf("l%d", i), Run: spec.Local, Command: []string{sleep, "3600"}, StopSignal: "SIGTERM"}
	})
	fmt.Printf("\nlocal processes (sleep), once: %s, and their own processes' VmRSS %.1f MiB\n", res, float64(res.own)/(1<<20))
}

// warm fills the compilation cache in cacheDir with the module.
func warm(cacheDir, module string) {
	w, err := worker.New(worker.Options{CacheDir: cacheDir})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	h, err := w.Start(context.Background(), runtime.Request{Output: newFirstLine(nil)}.For(plugin("warm", module)))
	if err != nil {
		log.Fatal(err)
	}
	h.Stop(context.Background())
}

func plugin(name, module string) *spec.Plugin {
	return &spec.Plugin{Name: name, Run: spec.Worker, Module: module, Args: args}
}

// roundGraft starts n workers on a new placement (as a host does,
// loading the module from the cache at its first start) and closes it.
func roundGraft(cacheDir, module string, n int) result {
	w, err := worker.New(worker.Options{CacheDir: cacheDir})
	if err != nil {
		log.Fatal(err)
	}
	return measure(n, w, func(i int) *spec.Plugin { return plugin(fmt.Sprintf("w%d", i), module) })
}

// roundFloor does what roundGraft does on bare wazero.
func roundFloor(cacheDir string, bin []byte, n int) result {
	cache, err := wazero.NewCompilationCacheWithDir(cacheDir)
	if err != nil {
		log.Fatal(err)
	}
	defer cache.Close(context.Background())
	var f *floor
	var linear int64
	r := run(n, func(lines *lines) {
		if f, err = newFloor(cache, bin, append([]string{"floor"}, args...)); err != nil {
			log.Fatal(err)
		}
		if err := f.start(n, func(int) *firstLine { return newFirstLine(lines) }); err != nil {
			log.Fatal(err)
		}
	}, func() { linear = f.linear(); f.close() })
	r.linear = linear
	return r
}

// report prints the medians of the rounds and graft's ratios to the floor.
func report(n int, fl, gr []result) {
	med := func(rs []result, f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	cols := []func(result) float64{
		func(r result) float64 { return ms(r.start) },
		func(r result) float64 { return ms(r.cpu) },
		func(r result) float64 { return ms(r.stop) },
		func(r result) float64 { return float64(r.mem) / (1 << 20) / float64(n) },
		func(r result) float64 { return float64(r.gc) / (1 << 20) / float64(n) },
	}
	row := func(name, format string, v func(func(result) float64) float64) {
		fmt.Printf("%-24s", name)
		for _, c := range cols {
			fmt.Printf(format, v(c))
		}
		fmt.Println()
	}
	fmt.Printf("\nmedians of %-2d rounds    %15s %15s %15s %15s %15s\n", len(fl),
		"start all, ms", "its CPU, ms", "stop all, ms", "MiB/instance", "after GC alone")
	row("floor (bare wazero)", " %15.2f", func(c func(result) float64) float64 { return med(fl, c) })
	row("graft (worker placement)", " %15.2f", func(c func(result) float64) float64 { return med(gr, c) })
	row("graft / floor", " %14.2fx", func(c func(result) float64) float64 { return med(gr, c) / med(fl, c) })
	fmt.Printf("of the floor's memory, its instances' linear memory (the Go runtime's heap in each): %.2f MiB/instance\n",
		med(fl, func(r result) float64 { return float64(r.linear) / (1 << 20) / float64(n) }))
}
