//go:build linux

// Command runnerfleet runs real graft runners and hosts on loopback and
// measures them as a fleet (bench/runnerfleet.sh builds graft and runs it):
//
//   - Part A: one host drives RUNNERS runners × PLUGINS sleeps each. Every
//     runner is then killed with SIGKILL and, after DOWN, started again on
//     its state dir, and the host applies again: the time from the restart
//     to every plugin running again, and the generations, which must all
//     grow and never repeat. What the host shows meanwhile is printed.
//
//   - Part B: HOSTS hosts (each with its own state dir) × HOST-PLUGINS
//     sleeps against one runner, connected to it directly: the applies'
//     outcome, then over a window the lease renewals per second the runner
//     answered (counted from its sessions' expiries in GET /v1/status), the
//     latency of GET /v1/status and of a renewal, timed from a client, and
//     the runner's CPU and RSS.
//
// Usage:
//
//	go run ./bench/runnerfleet -graft PATH [-parts a,b] [-runners 10] [-plugins 100] [-kills 2]
//		[-down 12s] [-wait-apply 0] [-retry YAML] [-tree]
//		[-hosts 10] [-host-plugins 100] [-window 30s] [-sequential]
//
// -wait-apply holds part A's re-apply back, and -retry gives the plugins a
// retry, to see whether the host brings them back alone; -tree gives each
// plugin a child (run with GRAFT_PID_NAMESPACE=off to see what a killed
// runner leaves of a family).
//
// Everything runs in a temporary directory, removed at the end; every
// daemon is stopped at the end, on failure or interrupt too, and plugin
// processes of the run still alive then (found by a variable in their
// environment) are killed and counted.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

type config struct {
	graft, sleep, sh string
	dir              string // the run's directory
	token            string
	tokenFile        string
	marker           string // RUNNERFLEET=<id>, in every plugin's environment
	retry            string // every plugin's retry, in YAML; "" none
	tree             bool   // each plugin a shell with a child, not a lone sleep

	runners, plugins, kills int
	down, waitApply         time.Duration
	hosts, hostPlugins      int
	window                  time.Duration
	sequential              bool
	timeout                 time.Duration
	probeEvery              time.Duration
}

func main() {
	var c config
	graft := flag.String("graft", "", "the graft program (required)")
	parts := flag.String("parts", "a,b", "the parts to run: a (runner fleet, kill -9), b (hosts against one runner)")
	flag.IntVar(&c.runners, "runners", 10, "part A: runners")
	flag.IntVar(&c.plugins, "plugins", 100, "part A: sleeps per runner")
	flag.IntVar(&c.kills, "kills", 2, "part A: rounds of kill -9 of every runner, restart and re-apply")
	flag.DurationVar(&c.down, "down", 12*time.Second, "part A: how long the runners stay dead while the host's status is sampled (the host gives a session up 10 s after its last renewal, with the default lease)")
	flag.DurationVar(&c.waitApply, "wait-apply", 0, "part A: how long after the restart to wait before the first re-apply, the host's status sampled meanwhile (0: at once)")
	flag.StringVar(&c.retry, "retry", "", "every plugin's retry, as in plugins.yaml, such as '{delay: 1 second, max: 5 seconds}' (default: none)")
	flag.BoolVar(&c.tree, "tree", false, "each plugin a shell that starts a sleep in the background and then runs another, so that it has a family (with GRAFT_PID_NAMESPACE=off, the child outlives a killed runner until the next one stops it)")
	flag.IntVar(&c.hosts, "hosts", 10, "part B: hosts against the one runner")
	flag.IntVar(&c.hostPlugins, "host-plugins", 100, "part B: sleeps per host")
	flag.DurationVar(&c.window, "window", 30*time.Second, "part B: each measuring window (one quiet, one probed)")
	flag.BoolVar(&c.sequential, "sequential", false, "part B: apply the hosts one after another, each once the last one's apply returned, instead of all at once")
	flag.DurationVar(&c.timeout, "timeout", 3*time.Minute, "the longest wait for plugins to run")
	flag.DurationVar(&c.probeEvery, "probe-every", 20*time.Millisecond, "part B: the pause between two calls of each prober")
	root := flag.String("root", "", "where the run's files go (default: a temporary directory, removed)")
	flag.Parse()
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	if *graft == "" {
		log.Fatal("-graft PATH is required")
	}
	var err error
	if c.graft, err = filepath.Abs(*graft); err != nil {
		log.Fatal(err)
	}
	if c.sleep, err = exec.LookPath("sleep"); err != nil {
		log.Fatal(err)
	}
	if c.sh, err = exec.LookPath("sh"); err != nil {
		log.Fatal(err)
	}
	if *root != "" {
		c.dir, err = filepath.Abs(*root)
		if err == nil {
			err = os.MkdirAll(c.dir, 0o700)
		}
	} else {
		c.dir, err = os.MkdirTemp("", "runnerfleet-")
	}
	if err != nil {
		log.Fatal(err)
	}
	id := make([]byte, 8)
	rand.Read(id)
	c.marker = "RUNNERFLEET=" + hex.EncodeToString(id)
	tok := make([]byte, 24)
	rand.Read(tok)
	c.token = hex.EncodeToString(tok)
	c.tokenFile = filepath.Join(c.dir, "token")
	if err := os.WriteFile(c.tokenFile, []byte(c.token+"\n"), 0o600); err != nil {
		log.Fatal(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	failed := false
	for _, part := range strings.Split(*parts, ",") {
		var err error
		switch part {
		case "a":
			err = partA(ctx, &c)
		case "b":
			err = partB(ctx, &c)
		default:
			err = fmt.Errorf("-parts: no part %q", part)
		}
		cleanup(&c)
		if err != nil {
			log.Printf("part %s: %v", part, err)
			failed = true
		}
		if ctx.Err() != nil {
			break
		}
	}
	if *root == "" {
		os.RemoveAll(c.dir)
	}
	if failed {
		os.Exit(1)
	}
}

// cleanup stops every daemon still running: each host with graft down
// (its plugins stopped through their runners), then any host left with
// SIGTERM, then the runners with SIGINT, each killed with its process
// group if it lingers; then kills what is left of the run's plugins.
func cleanup(c *config) {
	procs.Lock()
	list := procs.list
	procs.list = nil
	procs.Unlock()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed = map[string]int{}
		nfail  int
	)
	for _, p := range list {
		if p.file == "" || p.exited() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := graftCmd(context.Background(), c.graft, 2*time.Minute, "--file", p.file, "down"); err != nil {
				mu.Lock()
				defer mu.Unlock()
				nfail++
				for msg, n := range stepFailures(out) {
					failed[msg] += n
				}
			}
		}()
	}
	wg.Wait()
	if nfail > 0 {
		fmt.Printf("cleanup: graft down failed on %d hosts (each still ends its host; the runners stop the rest); failed steps:\n", nfail)
		printCounts(failed)
	}
	for _, p := range list {
		if p.file != "" {
			wg.Add(1)
			go func() { defer wg.Done(); p.stop(syscall.SIGTERM, 15*time.Second) }()
		}
	}
	wg.Wait()
	for _, p := range list {
		if p.file == "" {
			wg.Add(1)
			go func() { defer wg.Done(); p.stop(syscall.SIGINT, 20*time.Second) }()
		}
	}
	wg.Wait()
	if left := marked(c.marker); len(left) > 0 {
		log.Printf("cleanup: %d plugin processes of this run outlived their runners and hosts: killed", len(left))
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// startRunner starts graft runner on a loopback port with the run's
// token, and waits until it listens.
func startRunner(ctx context.Context, c *config, name, stateDir string, port int) (*proc, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := spawn(name, c.graft, filepath.Join(c.dir, name+".log"),
		"runner", "--listen", "tcp://"+addr, "--state-dir", stateDir, "--token-file", c.tokenFile)
	if err != nil {
		return nil, err
	}
	return p, waitListen(ctx, addr, p, 30*time.Second)
}

// startHost starts graft host for the plugins file file, and waits for
// its socket.
func startHost(ctx context.Context, c *config, name, file string) (*proc, error) {
	p, err := spawn(name, c.graft, filepath.Join(filepath.Dir(file), "host.log"), "host", "--file", file)
	if err != nil {
		return nil, err
	}
	p.file = file
	sock := filepath.Join(filepath.Dir(file), ".graft", "host.sock")
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := os.Stat(sock); err == nil {
			return p, nil
		}
		if p.exited() {
			return nil, fmt.Errorf("%s exited: %v", name, p.err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: no socket after 30 s", name)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// A runnerRef is a runner as a plugins file names it.
type runnerRef struct {
	name string
	port int
}

// writeSpec writes a plugins file of project with n sleeps, plugin i on
// runner on(i), each carrying the run's marker in its environment.
func writeSpec(c *config, file, project string, runners []runnerRef, n int, on func(int) int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nrunners:\n", project)
	for _, r := range runners {
		fmt.Fprintf(&b, "  %s: {address: \"tcp://127.0.0.1:%d\", tokenFile: %q}\n", r.name, r.port, c.tokenFile)
	}
	b.WriteString("plugins:\n")
	k, v, _ := strings.Cut(c.marker, "=")
	retry := ""
	if c.retry != "" {
		retry = ", retry: " + c.retry
	}
	command := fmt.Sprintf("[%q, \"3600\"]", c.sleep)
	if c.tree {
		command = fmt.Sprintf("[%q, -c, %q]", c.sh, c.sleep+" 3600 & exec "+c.sleep+" 3600")
	}
	for i := range n {
		fmt.Fprintf(&b, "  p%04d: {run: runner, runner: %s, command: %s, env: {%s: %q}%s}\n",
			i, runners[on(i)].name, command, k, v, retry)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	return os.WriteFile(file, []byte(b.String()), 0o600)
}

// apply runs graft apply for file and returns how long it took, its
// plan's summary line, its last line and its error.
type applied struct {
	took       time.Duration
	plan, last string
	out        []byte
	err        error
}

func apply(ctx context.Context, c *config, file string) applied {
	t := time.Now()
	out, err := graftCmd(ctx, c.graft, 10*time.Minute, "--file", file, "apply")
	a := applied{took: time.Since(t), out: out, err: err, last: lastLine(out)}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Plan for ") {
			a.plan = strings.TrimSpace(line)
			break
		}
	}
	return a
}

func (a applied) String() string {
	s := fmt.Sprintf("%.2f s; %s → %s", a.took.Seconds(), a.plan, a.last)
	if a.err != nil {
		s += fmt.Sprintf(" (%v)", a.err)
	}
	return s
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
