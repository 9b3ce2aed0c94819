//go:build linux

// Command runnerbench measures a start through a graft runner beside the
// same start on the local placement, in one process and one run, with
// the same isolation on both sides: N sleeps started P at a time (as an
// apply's steps are), then stopped P at a time, in rounds that alternate
// local and runner. The runner serves on a unix socket and is reached
// through runtime/remote, as a host reaches it; its state dir is on
// the temporary directory's file system. bench/runner.sh times the same
// through graft apply, CLI and host included.
//
//	go run ./bench/runnerbench -n 1000 -p 10 -rounds 5 [-no-namespace] [-cpuprofile FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/graftland/graft/bench"
	"github.com/graftland/graft/runner"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/local"
	"github.com/graftland/graft/runtime/remote"
	"github.com/graftland/graft/spec"
)

func main() {
	n := flag.Int("n", 1000, "processes")
	par := flag.Int("p", 10, "starts (and stops) at once: graft apply's default parallelism")
	rounds := flag.Int("rounds", 5, "rounds; medians are reported")
	noNS := flag.Bool("no-namespace", false, "no PID namespaces, on either side")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the runner rounds here")
	flag.Parse()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "runnerbench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	r, err := runner.Open(filepath.Join(dir, "state"), runner.Options{NoNamespace: *noNS, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	sock := filepath.Join(dir, "r.sock")
	ln, err := runner.ListenConfig{Addr: "unix://" + sock}.Listen()
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: r.Handler()}
	go srv.Serve(ln)
	defer srv.Close()

	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	var times [2][2][]time.Duration // [local, runner][start, stop]
	for round := range *rounds {
		l := local.New(local.Options{NoNamespace: *noNS})
		rm, err := remote.New(remote.Config{Address: "unix://" + sock})
		if err != nil {
			log.Fatal(err)
		}
		for i, p := range []runtime.Placement{l, rm} {
			start, stop := run(p, sleep, *n, *par, round)
			times[i][0] = append(times[i][0], start)
			times[i][1] = append(times[i][1], stop)
		}
		l.Close()
		rm.Close()
	}
	fmt.Printf("%d sleeps, %d at a time, %d rounds (medians); PID namespaces: %v\n", *n, *par, *rounds, !*noNS)
	report(times, *n)
}

// report prints the medians of times ([local, runner][start, stop]) and
// the median and range of the runner/local ratio of each round.
func report(times [2][2][]time.Duration, n int) {
	fmt.Printf("%-12s %12s %12s %8s %12s\n", "", "runner", "local", "ratio", "ratio range")
	for j, name := range []string{"start", "stop"} {
		lo, hi := 0.0, 0.0
		for k := range times[0][j] {
			q := float64(times[1][j][k]) / float64(times[0][j][k])
			if k == 0 || q < lo {
				lo = q
			}
			if k == 0 || q > hi {
				hi = q
			}
		}
		rt, lt := bench.Median(times[1][j]), bench.Median(times[0][j])
		fmt.Printf("%-12s %12s %12s %8.2f %5.2f-%.2f\n", fmt.Sprintf("%s %d", name, n), rt.Round(time.Millisecond), lt.Round(time.Millisecond),
			float64(rt)/float64(lt), lo, hi)
	}
}

// run starts n sleeps on p, par at a time, then stops them, par at a
// time, and returns how long each took.
func run(p runtime.Placement, sleep string, n, par, round int) (start, stop time.Duration) {
	hs := make([]runtime.Handle, n)
	began := time.Now()
	each(n, par, func(i int) {
		h, err := p.Start(context.Background(), runtime.Request{
			Project: "bench", Dir: os.TempDir(), Output: bench.Discard{},
		}.For(&spec.Plugin{Name: fmt.Sprintf("s%d", i), Instance: fmt.Sprintf("bench.s%d", i), Run: spec.Local,
			Command: []string{sleep, "3600"}, StopSignal: "SIGTERM"}))
		if err != nil {
			log.Fatalf("round %d: %v", round, err)
		}
		hs[i] = h
	})
	start = time.Since(began)
	began = time.Now()
	each(n, par, func(i int) {
		if _, err := hs[i].Stop(context.Background()); err != nil {
			log.Fatalf("round %d: %v", round, err)
		}
	})
	return start, time.Since(began)
}

// each calls f(0) to f(n-1), par at a time.
func each(n, par int, f func(int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
