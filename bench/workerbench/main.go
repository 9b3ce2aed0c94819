//go:build linux

// Command workerbench starts N WebAssembly workers and N local processes,
// and reports how long starting and stopping them took and what they cost
// the host in memory. bench/worker.sh builds the module and runs it.
//
//	go run ./bench/workerbench -module worker.wasm -n 100
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/graftland/graft/placement"
	"github.com/graftland/graft/placement/local"
	"github.com/graftland/graft/placement/worker"
	"github.com/graftland/graft/spec"
)

func main() {
	module := flag.String("module", "", "the worker module (examples/worker built for wasip1)")
	n := flag.Int("n", 100, "plugins of each kind")
	flag.Parse()
	if *module == "" {
		log.Fatal("-module is required")
	}
	abs, err := filepath.Abs(*module)
	if err != nil {
		log.Fatal(err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		log.Fatal(err)
	}
	cache, err := os.MkdirTemp("", "workerbench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(cache)

	// Compile once, so the figures are of starts with a warm cache, as a
	// host's are after the first.
	w, err := worker.New(worker.Options{CacheDir: cache})
	if err != nil {
		log.Fatal(err)
	}
	warm(w, abs)
	w.Close()

	fmt.Printf("%d plugins of each kind. Memory: the host's resident set (VmRSS) once all run, less before;\n", *n)
	fmt.Printf("and the plugins' own processes' resident sets, for local ones.\n")
	fmt.Printf("%-28s %10s %10s %12s %14s %14s\n", "", "start all", "stop all", "host memory", "per plugin", "own processes")
	w, err = worker.New(worker.Options{CacheDir: cache})
	if err != nil {
		log.Fatal(err)
	}
	measure("worker (WebAssembly, wazero)", w, *n, func(i int) *spec.Plugin {
		return &spec.Plugin{Name: fmt.Sprintf("w%d", i), Run: spec.Worker, Module: abs, Args: []string{"-every", "1h"}}
	})
	measure("local process (sleep)", local.New(local.Options{}), *n, func(i int) *spec.Plugin {
		return &spec.Plugin{Name: fmt.Sprintf("l%d", i), Run: spec.Local, Command: []string{sleep, "3600"}, StopSignal: "SIGTERM"}
	})
}

func warm(w *worker.Worker, module string) {
	h, err := w.Start(context.Background(), placement.Request{Plugin: &spec.Plugin{Name: "warm", Run: spec.Worker, Module: module, Args: []string{"-every", "1h"}}, Output: discard{}})
	if err != nil {
		log.Fatal(err)
	}
	h.Stop(context.Background())
}

func measure(name string, p placement.Placement, n int, plugin func(int) *spec.Plugin) {
	goruntime.GC()
	before := rss()
	began := time.Now()
	hs := make([]placement.Handle, n)
	for i := range hs {
		h, err := p.Start(context.Background(), placement.Request{Plugin: plugin(i), Dir: os.TempDir(), Output: discard{}})
		if err != nil {
			log.Fatal(err)
		}
		hs[i] = h
	}
	started := time.Since(began)
	time.Sleep(500 * time.Millisecond) // let them settle: a worker's runtime allocates as it starts
	goruntime.GC()
	used := rss() - before
	var own int64
	for _, h := range hs {
		if h.PID() != 0 {
			own += rssOf(fmt.Sprintf("/proc/%d/status", h.PID()))
		}
	}
	began = time.Now()
	if err := p.Close(); err != nil {
		log.Fatal(err)
	}
	stopped := time.Since(began)
	fmt.Printf("%-28s %10s %10s %8.1f MiB %10.2f MiB %10.1f MiB\n", name, started.Round(time.Millisecond), stopped.Round(time.Millisecond),
		float64(used)/(1<<20), float64(used)/(1<<20)/float64(n), float64(own)/(1<<20))
}

// rss is this process's resident set.
func rss() int64 { return rssOf("/proc/self/status") }

// rssOf reads VmRSS from a /proc/PID/status file.
func rssOf(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), &kb)
			return kb << 10
		}
	}
	return 0
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Tail() []string              { return nil }
