//go:build linux

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// genKey is one generation of one instance: the runner must never hand
// it out twice.
type genKey struct {
	instance   string
	generation int64
}

// partA: one host, c.runners runners × c.plugins sleeps; c.kills rounds
// of kill -9 of every runner, restart on the same state dirs, re-apply.
func partA(ctx context.Context, c *config) error {
	total := c.runners * c.plugins
	fmt.Printf("== Part A: 1 host, %d runners × %d sleeps (%d), %d rounds of kill -9 of every runner\n", c.runners, c.plugins, total, c.kills)
	refs := make([]runnerRef, c.runners)
	rs := make([]*proc, c.runners)
	clients := make([]*runnerClient, c.runners)
	for i := range refs {
		port, err := freePort()
		if err != nil {
			return err
		}
		refs[i] = runnerRef{name: fmt.Sprintf("r%02d", i), port: port}
		clients[i] = newRunnerClient(fmt.Sprintf("127.0.0.1:%d", port), c.token)
		defer clients[i].close()
	}
	state := func(i int) string { return filepath.Join(c.dir, "a", refs[i].name) }
	// startAll starts every runner at once, as a machine's service
	// manager would after a crash, and waits until all listen.
	startAll := func() error {
		for i := range refs {
			p, err := spawn("a-"+refs[i].name, c.graft, filepath.Join(c.dir, "a-"+refs[i].name+".log"),
				"runner", "--listen", fmt.Sprintf("tcp://127.0.0.1:%d", refs[i].port), "--state-dir", state(i), "--token-file", c.tokenFile)
			if err != nil {
				return err
			}
			rs[i] = p
		}
		for i, p := range rs {
			if err := waitListen(ctx, fmt.Sprintf("127.0.0.1:%d", refs[i].port), p, 30*time.Second); err != nil {
				return err
			}
		}
		return nil
	}
	if err := startAll(); err != nil {
		return err
	}
	file := filepath.Join(c.dir, "a", "host", "plugins.yaml")
	if err := writeSpec(c, file, "fleet", refs, total, func(i int) int { return i % c.runners }); err != nil {
		return err
	}
	if _, err := startHost(ctx, c, "a-host", file); err != nil {
		return err
	}
	a := apply(ctx, c, file)
	fmt.Printf("first apply: %s\n", a)
	if a.err != nil {
		return fmt.Errorf("first apply: %v\n%s", a.err, tail(a.out, 20))
	}
	old, err := waitRunning(ctx, c, file, total)
	if err != nil {
		return err
	}
	seen := map[genKey]int{} // the pid each generation was seen with
	if err := record(seen, old, 0); err != nil {
		return err
	}
	if err := crossCheck(ctx, clients, old, c.plugins); err != nil {
		return err
	}
	fmt.Printf("all %d running: generations %s\n", total, genSummary(old))

	failures := 0
	for round := 1; round <= c.kills; round++ {
		fmt.Printf("-- round %d: kill -9 of every runner\n", round)
		killed := time.Now()
		for _, p := range rs {
			p.cmd.Process.Signal(syscall.SIGKILL)
		}
		for _, p := range rs {
			<-p.done
			forget(p)
		}
		fmt.Printf("runners dead %.0f ms after the first SIGKILL\n", ms(time.Since(killed)))
		// What their deaths did to their plugins (docs/stopping.md: the
		// kernel ends a runner's PID namespace with it).
		for {
			at := time.Since(killed)
			alive := len(marked(c.marker))
			if alive == 0 {
				fmt.Printf("  no plugin process alive at +%.0f ms (looked at every 50 ms)\n", ms(at))
				break
			}
			if at > 5*time.Second {
				fmt.Printf("  %d plugin processes still alive at +%.1f s\n", alive, at.Seconds())
				break
			}
			if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
				return err
			}
		}
		// What the host shows while its runners are dead: a line per change.
		last := ""
		for t := time.Now(); time.Since(killed) < c.down; t = t.Add(500 * time.Millisecond) {
			if err := sleepCtx(ctx, time.Until(t)); err != nil {
				return err
			}
			alive := len(marked(c.marker))
			ps, err := hostStatus(ctx, c.graft, file)
			line := ""
			if err != nil {
				line = err.Error()
			} else {
				line = counts(ps) + errorsOf(ps)
			}
			line = fmt.Sprintf("%d of the %d plugin processes alive; the host shows %s", alive, total, line)
			if line != last {
				fmt.Printf("  +%.1f s: %s\n", time.Since(killed).Seconds(), line)
				last = line
			}
		}
		restarted := time.Now()
		if err := startAll(); err != nil {
			return err
		}
		// Nothing between the restart and the first apply but the runners'
		// start: the host's view is read after it.
		fmt.Printf("runners restarted, all listening after %.0f ms\n", ms(time.Since(restarted)))
		// Apply at once, then again whenever the host shows a plugin that
		// is not running (it gave its session up: unconfirmed), until every
		// plugin runs a larger generation. An apply made before the host saw
		// its sessions lost finds nothing to do.
		var now map[string]hostPlugin
		applies, view := 0, ""
		deadline := time.Now().Add(c.timeout)
		for needs := c.waitApply == 0; ; {
			if needs || c.waitApply > 0 && applies == 0 && time.Since(restarted) >= c.waitApply {
				applies++
				at := time.Since(restarted)
				a := apply(ctx, c, file)
				fmt.Printf("  apply %d from +%.2f s to +%.2f s: %s\n", applies, at.Seconds(), time.Since(restarted).Seconds(), a)
				if a.err != nil {
					fmt.Print(tail(a.out, 10))
				}
			} else if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
				return err
			}
			ps, err := hostStatus(ctx, c.graft, file)
			if err != nil {
				return err
			}
			if v := counts(ps) + errorsOf(ps); v != view {
				fmt.Printf("  host at +%.2f s: %s\n", time.Since(restarted).Seconds(), v)
				view = v
			}
			var done bool
			if now, done = converged(ps, old, total); done {
				break
			}
			needs = false
			for _, p := range ps {
				needs = needs || p.Status != "running"
			}
			needs = needs && (c.waitApply == 0 || applies > 0)
			if time.Now().After(deadline) || applies >= 10 {
				return fmt.Errorf("round %d: not all %d running at a larger generation after %d applies, %s: %s",
					round, total, applies, time.Since(restarted).Round(time.Millisecond), view)
			}
		}
		converged := time.Since(restarted)
		fmt.Printf("converged: all %d running again %.2f s after the restart (%d applies); plugin processes alive: %d\n",
			total, converged.Seconds(), applies, len(marked(c.marker)))
		bad := 0
		for inst, p := range now {
			if o := old[inst]; p.Generation <= o.Generation {
				bad++
				if bad <= 10 {
					fmt.Printf("  VIOLATION: %s generation %d after %d\n", inst, p.Generation, o.Generation)
				}
			}
		}
		if err := record(seen, now, round); err != nil {
			bad++
			fmt.Printf("  VIOLATION: %v\n", err)
		}
		if err := crossCheck(ctx, clients, now, c.plugins); err != nil {
			bad++
			fmt.Printf("  VIOLATION: %v\n", err)
		}
		fmt.Printf("generations: before %s; after %s; %d grew, %d did not; (instance, generation) pairs seen %d, none twice: %v\n",
			genSummary(old), genSummary(now), len(now)-bad, bad, len(seen), bad == 0)
		fmt.Printf("runners' metrics: %s\n", metricSummary(ctx, clients))
		failures += bad
		old = now
	}
	if failures > 0 {
		return fmt.Errorf("%d violations of the generations' order", failures)
	}
	return nil
}

// converged says whether all n plugins of ps run, each (when old is
// given) at a larger generation than in old, and returns them by instance.
func converged(ps []hostPlugin, old map[string]hostPlugin, n int) (map[string]hostPlugin, bool) {
	ok := len(ps) == n
	m := make(map[string]hostPlugin, len(ps))
	for _, p := range ps {
		m[p.Instance] = p
		if p.Status != "running" || old != nil && p.Generation <= old[p.Instance].Generation {
			ok = false
		}
	}
	return m, ok
}

// waitRunning polls the host until all n plugins run.
func waitRunning(ctx context.Context, c *config, file string, n int) (map[string]hostPlugin, error) {
	deadline := time.Now().Add(c.timeout)
	for {
		ps, err := hostStatus(ctx, c.graft, file)
		last := ""
		if err == nil {
			m, ok := converged(ps, nil, n)
			if ok {
				return m, nil
			}
			last = counts(ps) + errorsOf(ps)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("not all %d running in %s: %s", n, c.timeout, last)
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// record adds the generations of ps to seen and fails when one was seen
// before with another process.
func record(seen map[genKey]int, ps map[string]hostPlugin, round int) error {
	var twice []string
	for inst, p := range ps {
		k := genKey{inst, p.Generation}
		if pid, ok := seen[k]; ok && pid != p.PID {
			twice = append(twice, fmt.Sprintf("%s generation %d (pid %d, then %d)", inst, p.Generation, pid, p.PID))
		}
		seen[k] = p.PID
	}
	if len(twice) > 0 {
		slices.Sort(twice)
		return fmt.Errorf("round %d: %d generations handed out twice: %s", round, len(twice), strings.Join(twice[:min(5, len(twice))], "; "))
	}
	return nil
}

// crossCheck compares the host's view with every runner's GET /v1/status:
// each runner holds per instances, running, at the host's generations.
func crossCheck(ctx context.Context, clients []*runnerClient, ps map[string]hostPlugin, per int) error {
	for i, rc := range clients {
		st, err := rc.status(ctx)
		if err != nil {
			return fmt.Errorf("runner %d: GET /v1/status: %v", i, err)
		}
		running := 0
		for _, in := range st.Instances {
			if in.Status != "running" {
				continue
			}
			running++
			if p, ok := ps[in.Instance]; !ok || p.Generation != in.Generation || p.PID != in.PID {
				return fmt.Errorf("runner %d runs %s generation %d pid %d; the host shows generation %d pid %d",
					i, in.Instance, in.Generation, in.PID, p.Generation, p.PID)
			}
		}
		if running != per {
			return fmt.Errorf("runner %d runs %d instances, not %d", i, running, per)
		}
	}
	return nil
}

// genSummary is the range of the generations in ps.
func genSummary(ps map[string]hostPlugin) string {
	lo, hi := int64(0), int64(0)
	n := map[int64]int{}
	for _, p := range ps {
		if lo == 0 || p.Generation < lo {
			lo = p.Generation
		}
		hi = max(hi, p.Generation)
		n[p.Generation]++
	}
	if lo == hi {
		return fmt.Sprintf("all %d", lo)
	}
	return fmt.Sprintf("%d–%d (%v)", lo, hi, n)
}

var (
	uuid   = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	digits = regexp.MustCompile(`\d+(\.\d+)?`)
)

// errorsOf names the distinct last errors of ps, with counts, briefly.
func errorsOf(ps []hostPlugin) string {
	n := map[string]int{}
	for _, p := range ps {
		if p.LastError != "" {
			e := uuid.ReplaceAllString(strings.ReplaceAll(p.LastError, p.Instance, "INSTANCE"), "ID")
			n[clip(digits.ReplaceAllString(e, "N"), 200)]++
		}
	}
	if len(n) == 0 {
		return ""
	}
	var parts []string
	for e, k := range n {
		parts = append(parts, fmt.Sprintf("%d× %q", k, e))
	}
	slices.Sort(parts)
	return "; last errors: " + strings.Join(parts, ", ")
}

// metricSummary sums the runners' counters of recoveries, generations
// and damaged journal entries since their start.
func metricSummary(ctx context.Context, clients []*runnerClient) string {
	sum := map[string]float64{}
	for _, rc := range clients {
		m, err := rc.metrics(ctx)
		if err != nil {
			return err.Error()
		}
		for k, v := range m {
			if strings.HasPrefix(k, "graft_runner_recoveries_total") || strings.HasPrefix(k, "graft_runner_generations_total") ||
				strings.HasPrefix(k, "graft_runner_damaged_entries_total") || strings.HasPrefix(k, "graft_runner_sessions") {
				sum[strings.TrimPrefix(k, "graft_runner_")] += v
			}
		}
	}
	return joinSorted(sum, func(k string, v float64) string { return fmt.Sprintf("%s %g", k, v) })
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// tail is the last n lines of out, indented.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	return "    " + strings.Join(lines, "\n    ") + "\n"
}
