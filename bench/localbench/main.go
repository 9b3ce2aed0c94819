//go:build linux

// Command localbench measures graft's local placement beside a bare Go
// fork/exec loop, on the same machine in the same run: start N sleeps,
// stop them all, and restart one of N. bench/local.sh runs it beside
// supervisord.
//
//	go run ./bench/localbench -n 200 -rounds 5
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/graftland/graft/bench"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/local"
	"github.com/graftland/graft/spec"
)

func main() {
	n := flag.Int("n", 200, "processes")
	rounds := flag.Int("rounds", 5, "rounds; the median is reported")
	profile := flag.String("cpuprofile", "", "write graft's rounds' CPU profile to this file")
	flag.Parse()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		log.Fatal(err)
	}
	var graft, bare [4][]time.Duration
	for range *rounds {
		stop := startProfile(*profile)
		g := graftRound(sleep, *n)
		stop()
		for i, ds := range g {
			graft[i] = append(graft[i], ds...)
		}
		for i, ds := range bareRound(sleep, *n) {
			bare[i] = append(bare[i], ds...)
		}
	}
	names := []string{
		fmt.Sprintf("start %d", *n),
		fmt.Sprintf("stop %d", *n),
		fmt.Sprintf("restart 1 of %d", *n),
		fmt.Sprintf("restart 1 of %d, idle", *n),
	}
	// The ratio of the medians, and the median of the ratios of the
	// measurements taken in turn (a round of graft, then one of the bare
	// loop): on a machine whose speed drifts, the pairs see the same.
	fmt.Printf("%-24s %12s %12s %8s %8s %12s\n", "(medians)", "graft", "bare Go", "ratio", "paired", "pair range")
	for i, name := range names {
		g, b := bench.Median(graft[i]), bench.Median(bare[i])
		ratios := make([]float64, len(graft[i]))
		for k := range ratios {
			ratios[k] = float64(graft[i][k]) / float64(bare[i][k])
		}
		slices.Sort(ratios)
		fmt.Printf("%-24s %12s %12s %7.2fx %7.2fx %5.2f–%.2fx\n", name, g.Round(10*time.Microsecond), b.Round(10*time.Microsecond),
			float64(g)/float64(b), ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1])
	}
}

// restarts is how many plugins each round restarts, back to back and
// then each after a pause: a restart in the middle of an apply, and one
// on a host that has been idle.
const restarts = 10

// pause is longer than the window in which graft's process table is kept
// up to date without a whole read (see internal/proc).
const pause = 150 * time.Millisecond

// graftRound starts n sleeps on a local placement one after another, as
// an apply's steps do; restarts some, back to back then after pauses;
// then closes the placement, which stops them all at once.
func graftRound(sleep string, n int) [4][]time.Duration {
	l := local.New(local.Options{})
	out := bench.Discard{}
	req := func(i int) runtime.Request {
		return runtime.Request{
			Dir: os.TempDir(), Output: out,
		}.For(&spec.Plugin{Name: fmt.Sprintf("s%d", i), Run: spec.Local, Command: []string{sleep, "3600"}, StopSignal: "SIGTERM"})
	}
	var d [4][]time.Duration
	began := time.Now()
	hs := make([]runtime.Handle, n)
	for i := range hs {
		h, err := l.Start(context.Background(), req(i))
		if err != nil {
			log.Fatal(err)
		}
		hs[i] = h
	}
	d[0] = append(d[0], time.Since(began))

	restart := func(i int) time.Duration {
		began := time.Now()
		if _, err := hs[i].Stop(context.Background()); err != nil {
			log.Fatal(err)
		}
		h, err := l.Start(context.Background(), req(i))
		if err != nil {
			log.Fatal(err)
		}
		hs[i] = h
		return time.Since(began)
	}
	for i := range restarts {
		d[2] = append(d[2], restart(i*n/restarts))
	}
	for i := range restarts {
		time.Sleep(pause)
		d[3] = append(d[3], restart(i*n/restarts+1))
	}

	began = time.Now()
	if err := l.Close(); err != nil {
		log.Fatal(err)
	}
	d[1] = append(d[1], time.Since(began))
	return d
}

// bareRound is the floor: a bare loop of fork/exec with a pidfd (as
// graft watches its processes), one after another; restarts as
// graftRound does them; then SIGTERM to all through their pidfds and a
// wait for each.
func bareRound(sleep string, n int) [4][]time.Duration {
	var d [4][]time.Duration
	argv := []string{sleep, "3600"}
	env := os.Environ()
	start := func() bare {
		b := bare{pidfd: -1}
		pid, err := syscall.ForkExec(sleep, argv, &syscall.ProcAttr{
			Env: env,
			Sys: &syscall.SysProcAttr{Setpgid: true, PidFD: &b.pidfd},
		})
		if err != nil {
			log.Fatal(err)
		}
		b.pid = pid
		return b
	}
	began := time.Now()
	procs := make([]bare, n)
	for i := range procs {
		procs[i] = start()
	}
	d[0] = append(d[0], time.Since(began))

	restart := func(i int) time.Duration {
		began := time.Now()
		procs[i].stop()
		procs[i] = start()
		return time.Since(began)
	}
	for i := range restarts {
		d[2] = append(d[2], restart(i*n/restarts))
	}
	for i := range restarts {
		time.Sleep(pause)
		d[3] = append(d[3], restart(i*n/restarts+1))
	}

	began = time.Now()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop() }()
	}
	wg.Wait()
	d[1] = append(d[1], time.Since(began))
	return d
}

// bare is a process of the floor: its pid and a pidfd of it.
type bare struct{ pid, pidfd int }

// stop sends SIGTERM through the pidfd and reaps the process.
func (b bare) stop() {
	if err := unix.PidfdSendSignal(b.pidfd, syscall.SIGTERM, nil, 0); err != nil {
		log.Fatal(err)
	}
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(b.pid, &ws, 0, nil); err != syscall.EINTR {
			break
		}
	}
	unix.Close(b.pidfd)
}

// startProfile adds what runs until the returned func to the CPU profile
// in path, if any.
func startProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
