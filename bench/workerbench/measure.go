//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

// result is one round of one kind.
type result struct {
	start, stop time.Duration
	cpu         time.Duration // the process's CPU time (user and system) over start
	mem, gc     int64         // the host's VmRSS growth, after FreeOSMemory and after a GC alone
	own         int64         // the plugins' own processes' VmRSS
	linear      int64         // the floor's instances' linear memory
}

func (r result) String() string {
	return fmt.Sprintf("start %s (CPU %s), stop %s, host memory %.0f MiB (%.0f after a GC alone)", r.start.Round(time.Millisecond),
		r.cpu.Round(time.Millisecond), r.stop.Round(time.Millisecond), float64(r.mem)/(1<<20), float64(r.gc)/(1<<20))
}

// settle is how long instances are left after their first line before
// memory is read: a Go module's runtime goes on allocating as it starts.
const settle = 300 * time.Millisecond

// run times start until each of n instances has written a line, reads
// the memory they hold, and times stop.
func run(n int, start func(*lines), stop func()) result {
	debug.FreeOSMemory()
	before := rss()
	lines := &lines{}
	lines.Add(n)
	began, cpu := time.Now(), cpuTime()
	start(lines)
	lines.Wait()
	var r result
	r.start, r.cpu = time.Since(began), cpuTime()-cpu
	time.Sleep(settle)
	goruntime.GC()
	r.gc = rss() - before
	debug.FreeOSMemory()
	r.mem = rss() - before
	began = time.Now()
	stop()
	r.stop = time.Since(began)
	return r
}

// measure is run of n plugins on p, one started after another as an
// apply's steps do, closed (stopped all at once) as a host's end does.
func measure(n int, p runtime.Placement, plugin func(int) *spec.Plugin) result {
	var hs []runtime.Handle
	var own int64
	r := run(n, func(lines *lines) {
		for i := range n {
			req := runtime.Request{Dir: os.TempDir(), Output: newFirstLine(lines)}.For(plugin(i))
			if plugin(i).Run == spec.Local {
				req.Output = discard{}
				defer lines.Done() // a sleep writes nothing: started is running
			}
			h, err := p.Start(context.Background(), req)
			if err != nil {
				log.Fatal(err)
			}
			hs = append(hs, h)
		}
	}, func() {
		for _, h := range hs { // read while they run, before the stop
			if h.PID() != 0 {
				own += rssOf(fmt.Sprintf("/proc/%d/status", h.PID()))
			}
		}
		if err := p.Close(); err != nil {
			log.Fatal(err)
		}
	})
	r.own = own
	return r
}

// lines counts the instances that have not yet written their first line.
type lines struct{ sync.WaitGroup }

// firstLine is an instance's output: it is discarded, and its first
// write tells lines.
type firstLine struct {
	once  sync.Once
	lines *lines
}

func newFirstLine(l *lines) *firstLine { return &firstLine{lines: l} }

func (f *firstLine) Write(p []byte) (int, error) {
	if f.lines != nil {
		f.once.Do(f.lines.Done)
	}
	return len(p), nil
}

func (*firstLine) Tail() []string { return nil }

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Tail() []string              { return nil }

// cpuTime is the CPU time this process has used, its threads' user and
// system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
