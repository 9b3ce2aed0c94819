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
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/graftland/graft/placement"
	"github.com/graftland/graft/placement/local"
	"github.com/graftland/graft/spec"
)

func main() {
	n := flag.Int("n", 200, "processes")
	rounds := flag.Int("rounds", 5, "rounds; the median is reported")
	flag.Parse()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		log.Fatal(err)
	}
	var graft, bare [4][]time.Duration
	for range *rounds {
		for i, ds := range graftRound(sleep, *n) {
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
	fmt.Printf("%-24s %12s %12s %8s\n", "(medians)", "graft", "bare Go", "ratio")
	for i, name := range names {
		g, b := median(graft[i]), median(bare[i])
		fmt.Printf("%-24s %12s %12s %7.2fx\n", name, g.Round(10*time.Microsecond), b.Round(10*time.Microsecond), float64(g)/float64(b))
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
	out := discard{}
	req := func(i int) placement.Request {
		return placement.Request{
			Plugin: &spec.Plugin{Name: fmt.Sprintf("s%d", i), Run: spec.Local, Command: []string{sleep, "3600"}, StopSignal: "SIGTERM"},
			Dir:    os.TempDir(), Output: out,
		}
	}
	var d [4][]time.Duration
	began := time.Now()
	hs := make([]placement.Handle, n)
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

// bareRound is the floor: exec.Cmd.Start n times, restarts as graftRound
// does them, then SIGTERM to all and Wait.
func bareRound(sleep string, n int) [4][]time.Duration {
	var d [4][]time.Duration
	start := func() *exec.Cmd {
		cmd := exec.Command(sleep, "3600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			log.Fatal(err)
		}
		return cmd
	}
	stop := func(cmd *exec.Cmd) {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
	began := time.Now()
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		cmds[i] = start()
	}
	d[0] = append(d[0], time.Since(began))

	restart := func(i int) time.Duration {
		began := time.Now()
		stop(cmds[i])
		cmds[i] = start()
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
	for _, cmd := range cmds {
		wg.Add(1)
		go func() { defer wg.Done(); stop(cmd) }()
	}
	wg.Wait()
	d[1] = append(d[1], time.Since(began))
	return d
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Tail() []string              { return nil }
