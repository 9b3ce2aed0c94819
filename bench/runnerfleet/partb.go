//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// partB: c.hosts hosts × c.hostPlugins sleeps against one runner, each
// host connected to it directly.
func partB(ctx context.Context, c *config) error {
	total := c.hosts * c.hostPlugins
	mode := "all at once"
	if c.sequential {
		mode = "one after another"
	}
	fmt.Printf("== Part B: %d hosts × %d sleeps (%d) against one runner, applied %s\n", c.hosts, c.hostPlugins, total, mode)
	port, err := freePort()
	if err != nil {
		return err
	}
	runnerLog := filepath.Join(c.dir, "b-runner.log")
	r, err := startRunner(ctx, c, "b-runner", filepath.Join(c.dir, "b", "runner"), port)
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	refs := []runnerRef{{name: "box", port: port}}
	files := make([]string, c.hosts)
	hosts := make([]*proc, c.hosts)
	for i := range files {
		files[i] = filepath.Join(c.dir, "b", fmt.Sprintf("h%02d", i), "plugins.yaml")
		if err := writeSpec(c, files[i], fmt.Sprintf("h%02d", i), refs, c.hostPlugins, func(int) int { return 0 }); err != nil {
			return err
		}
		if hosts[i], err = startHost(ctx, c, fmt.Sprintf("b-h%02d", i), files[i]); err != nil {
			return err
		}
	}
	results := make([]applied, c.hosts)
	during := startProbers(ctx, c, addr)
	began := time.Now()
	if c.sequential {
		for i, f := range files {
			results[i] = apply(ctx, c, f)
		}
	} else {
		var wg sync.WaitGroup
		for i, f := range files {
			wg.Add(1)
			go func() { defer wg.Done(); results[i] = apply(ctx, c, f) }()
		}
		wg.Wait()
	}
	took := time.Since(began)
	st, rn := during.stop()
	fmt.Printf("applies done after %.2f s:\n", took.Seconds())
	failed := map[string]int{}
	nfailed := 0
	for i, a := range results {
		fmt.Printf("  h%02d: %s\n", i, a)
		if a.err != nil {
			nfailed++
		}
		for msg, n := range stepFailures(a.out) {
			failed[msg] += n
		}
	}
	if len(failed) > 0 {
		fmt.Printf("failed steps, by message (plugin names and numbers as N):\n")
		printCounts(failed)
	}
	fmt.Printf("while the hosts applied, from a prober's side (each call %s after the last answer):\n  GET /v1/status: %s\n  POST renew:     %s\n",
		c.probeEvery, &st, &rn)
	// The hosts' own view, once their applies returned (and retries had
	// a moment).
	hostsRunning := func() (int, string) {
		running := 0
		var parts []string
		for i, f := range files {
			ps, err := hostStatus(ctx, c.graft, f)
			if err != nil {
				parts = append(parts, fmt.Sprintf("h%02d: %v", i, err))
				continue
			}
			for _, p := range ps {
				if p.Status == "running" {
					running++
				}
			}
			parts = append(parts, fmt.Sprintf("h%02d: %s", i, counts(ps)))
		}
		return running, strings.Join(parts, "; ")
	}
	running, view := 0, ""
	for deadline := time.Now().Add(min(c.timeout, 30*time.Second)); ; {
		running, view = hostsRunning()
		if running == total || time.Now().After(deadline) {
			break
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return err
		}
	}
	fmt.Printf("the hosts show %d of %d running: %s\n", running, total, view)
	pids := make([]int, len(hosts))
	for i, h := range hosts {
		pids[i] = h.pid()
	}
	fmt.Printf("connections each host holds to the runner: %v\n", conns(port, pids))

	watcher := newRunnerClient(addr, c.token)
	defer watcher.close()
	quiet, err := measure(ctx, c, r, watcher, addr, false)
	if err != nil {
		return err
	}
	fmt.Printf("quiet window (%s; GET /v1/status once a second, to count renewals):\n%s", c.window, quiet)
	probed, err := measure(ctx, c, r, watcher, addr, true)
	if err != nil {
		return err
	}
	fmt.Printf("probed window (%s; besides, a prober's GET /v1/status and another's renewals of a session of its own, each %s after the last answer):\n%s", c.window, c.probeEvery, probed)
	if nfailed > 0 {
		// Whether the failures were for the moment only: the hosts whose
		// applies failed apply again, one after another.
		for i, a := range results {
			if a.err != nil {
				fmt.Printf("  again h%02d: %s\n", i, apply(ctx, c, files[i]))
			}
		}
		again, view := hostsRunning()
		fmt.Printf("after those hosts applied again, one after another: %d of %d running: %s\n", again, total, view)
	}
	fmt.Printf("the runner's log, warnings and errors by message:\n")
	printCounts(logCounts(runnerLog))
	hostLogs := map[string]int{}
	for _, f := range files {
		for k, v := range logCounts(filepath.Join(filepath.Dir(f), "host.log")) {
			hostLogs[k] += v
		}
	}
	fmt.Printf("the hosts' logs, warnings and errors by message (all %d hosts):\n", c.hosts)
	printCounts(hostLogs)
	if nfailed > 0 || running != total {
		return fmt.Errorf("%d of %d applies failed; %d of %d plugins running", nfailed, c.hosts, running, total)
	}
	return nil
}

// window is what one measuring window saw.
type window struct {
	took               time.Duration
	renewals           int // of the hosts' sessions, prober's excluded
	sessions           int
	cpu                float64 // % of one core
	rssKB, hwmKB       int64
	status, renew      latencies
	watchErrs          map[string]int
	instancesByStatus  map[string]int
	sessionsNoRenewals int
}

func (w *window) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  runner: %d sessions, instances %v; lease renewals answered: %d in %.1f s, %.2f/s (sessions never renewed in the window: %d)\n",
		w.sessions, w.instancesByStatus, w.renewals, w.took.Seconds(), float64(w.renewals)/w.took.Seconds(), w.sessionsNoRenewals)
	fmt.Fprintf(&b, "  runner CPU: %.2f%% of one core; RSS %.1f MiB at the end, peak (VmHWM) %.1f MiB\n", w.cpu, float64(w.rssKB)/1024, float64(w.hwmKB)/1024)
	if len(w.watchErrs) > 0 {
		fmt.Fprintf(&b, "  the watcher's GET /v1/status failed: %v\n", w.watchErrs)
	}
	if len(w.status.ds) > 0 || len(w.status.errs) > 0 {
		fmt.Fprintf(&b, "  GET /v1/status: %s\n", &w.status)
		fmt.Fprintf(&b, "  POST renew:     %s\n", &w.renew)
	}
	return b.String()
}

// measure watches the runner for c.window: its sessions' expiries once a
// second (each renewal moves one), its CPU and RSS; with probe, a prober
// times GET /v1/status and another the renewals of a session of its own.
func measure(ctx context.Context, c *config, r *proc, watcher *runnerClient, addr string, probe bool) (*window, error) {
	w := &window{watchErrs: map[string]int{}}
	var pr *probers
	own := ""
	if probe {
		pr = startProbers(ctx, c, addr)
		own = pr.session
	}
	expires := map[string]time.Time{}
	renewed := map[string]bool{}
	cpu0, err := cpuNanos(r.pid())
	if err != nil {
		return nil, err
	}
	began := time.Now()
	var last *runnerStatus
	for t := began; time.Since(began) < c.window; t = t.Add(time.Second) {
		if err := sleepCtx(ctx, time.Until(t)); err != nil {
			return nil, err
		}
		st, err := watcher.status(ctx)
		if err != nil {
			w.watchErrs[clip(err.Error(), 160)]++
			continue
		}
		last = st
		for _, s := range st.Sessions {
			if s.Session == own {
				continue
			}
			if e, ok := expires[s.Session]; ok && !s.Expires.Equal(e) {
				w.renewals++
				renewed[s.Session] = true
			}
			expires[s.Session] = s.Expires
		}
	}
	w.took = time.Since(began)
	cpu1, err := cpuNanos(r.pid())
	if err != nil {
		return nil, err
	}
	w.cpu = float64(cpu1-cpu0) / float64(w.took) * 100
	w.rssKB, w.hwmKB = memKB(r.pid())
	if pr != nil {
		w.status, w.renew = pr.stop()
	}
	if last != nil {
		w.instancesByStatus = map[string]int{}
		for _, in := range last.Instances {
			w.instancesByStatus[in.Status]++
		}
		for _, s := range last.Sessions {
			if s.Session == own {
				continue
			}
			w.sessions++
			if !renewed[s.Session] {
				w.sessionsNoRenewals++
			}
		}
	}
	return w, nil
}

// probers time the runner's answers from a client's side: one calls
// GET /v1/status, another renews a session of its own, each on a
// kept-alive connection of its own, c.probeEvery after the last answer.
type probers struct {
	session       string
	cancel        func()
	wg            sync.WaitGroup
	status, renew latencies
	sp, rp        *runnerClient
}

func startProbers(ctx context.Context, c *config, addr string) *probers {
	pctx, cancel := context.WithCancel(ctx)
	pr := &probers{cancel: cancel, sp: newRunnerClient(addr, c.token), rp: newRunnerClient(addr, c.token)}
	var err error
	if pr.session, err = pr.rp.openSession(ctx, 15*time.Second); err != nil {
		pr.renew.add(0, fmt.Errorf("open a session: %w", err))
	}
	loop := func(l *latencies, call func(context.Context) error) {
		defer pr.wg.Done()
		for pctx.Err() == nil {
			t := time.Now()
			err := call(pctx)
			if pctx.Err() != nil {
				return
			}
			l.add(time.Since(t), err)
			sleepCtx(pctx, c.probeEvery)
		}
	}
	pr.wg.Add(1)
	go loop(&pr.status, func(ctx context.Context) error { _, err := pr.sp.status(ctx); return err })
	if pr.session != "" {
		pr.wg.Add(1)
		go loop(&pr.renew, func(ctx context.Context) error { return pr.rp.renew(ctx, pr.session) })
	}
	return pr
}

// stop ends the probes and the prober's session, and returns what they saw.
func (pr *probers) stop() (status, renew latencies) {
	pr.cancel()
	pr.wg.Wait()
	if pr.session != "" {
		pr.rp.endSession(context.Background(), pr.session)
	}
	pr.sp.close()
	pr.rp.close()
	return pr.status, pr.renew
}

var (
	stepLine = regexp.MustCompile(`^\s*✗ (\S+)\s+\S+\s+\S+\s+(.*)$`)
	numbers  = regexp.MustCompile(`\bp\d{4}\b|\bh\d{2}\b|\d+`)
)

// stepFailures counts an apply's failed steps by message.
func stepFailures(out []byte) map[string]int {
	n := map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		if m := stepLine.FindStringSubmatch(line); m != nil {
			n[m[1]+": "+clip(numbers.ReplaceAllString(strings.TrimSpace(m[2]), "N"), 320)]++
		}
	}
	return n
}

var logMsg = regexp.MustCompile(`level=(WARN|ERROR) msg=("(?:[^"\\]|\\.)*"|\S+)`)

// logCounts counts a daemon's warnings and errors (its text log) by message.
func logCounts(path string) map[string]int {
	b, err := os.ReadFile(path)
	n := map[string]int{}
	if err != nil {
		n[err.Error()]++
		return n
	}
	for _, line := range strings.Split(string(b), "\n") {
		if m := logMsg.FindStringSubmatch(line); m != nil {
			n[m[1]+" "+numbers.ReplaceAllString(m[2], "N")]++
		}
	}
	return n
}

func printCounts(n map[string]int) {
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return n[b] - n[a] })
	if len(keys) == 0 {
		fmt.Println("  none")
	}
	for _, k := range keys {
		fmt.Printf("  %6d  %s\n", n[k], k)
	}
}
