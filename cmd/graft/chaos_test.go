//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/plan"
)

// TestChaos kills the host with SIGKILL at random moments while it applies
// about 50 plugins: local ones, local ones that fork a setsid daemon, and
// ones on the runner embedded in the host. After each kill the next graft
// apply (which starts a new host) must bring about the spec, and then:
//   - no process of an old instance is left: every plugin process alive
//     carries the instance and generation of a plugin the status lists;
//   - the status tells the truth: every plugin is running, with a pid
//     that lives and carries the instance the status names;
//   - generations never repeat: a runner plugin's new process always has
//     a larger generation than any before it.
//
// It runs with plugins in the host's PID namespace (the kernel ends
// a dead host's families) and without (the next host cleans up after the
// last). GRAFT_CHAOS_ROUNDS sets the number of rounds of each (default
// 3); each run logs the start of its random source, and GRAFT_CHAOS_RANDOM
// replays a run from it.
func TestChaos(t *testing.T) {
	for _, ns := range []string{"auto", "off"} {
		t.Run("pid-namespace="+ns, func(t *testing.T) { testChaos(t, ns) })
	}
}

func testChaos(t *testing.T, pidNamespace string) {
	rounds := 3
	if s := os.Getenv("GRAFT_CHAOS_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		rounds = n
	}
	start := uint64(time.Now().UnixNano())
	if s := os.Getenv("GRAFT_CHAOS_RANDOM"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		start = n
	}
	t.Logf("random source from %d (GRAFT_CHAOS_RANDOM=%d replays it)", start, start)
	rnd := rand.New(rand.NewPCG(start, start))
	c := &chaos{t: t, dir: t.TempDir(), gens: map[string]generation{}, pidNamespace: pidNamespace}
	c.run = c.dir
	t.Cleanup(c.cleanup)

	c.write(0, rnd)
	c.graft(true, "apply")
	c.check(0)
	for round := 1; round <= rounds; round++ {
		c.write(round, rnd)
		apply := exec.Command("graft", "apply")
		apply.Dir, apply.Env = c.dir, c.env()
		require.NoError(t, apply.Start())
		time.Sleep(time.Duration(rnd.IntN(250)) * time.Millisecond)
		c.killHost()
		if apply.Wait() == nil { // it fails or succeeds, whichever the kill allowed
			t.Logf("round %d: the host was killed after the apply", round)
		} else {
			t.Logf("round %d: the host was killed during the apply", round)
		}

		c.graft(true, "apply")
		c.check(round)
	}
	c.graft(true, "down")
	waitUntil(t, 10*time.Second, func() bool { return len(c.plugins()) == 0 }, "every plugin process is gone after down")
}

type chaos struct {
	t            *testing.T
	dir          string
	run          string                // GRAFT_TEST_RUN: marks every process of the test
	gens         map[string]generation // the last process seen of each runner instance
	pidNamespace string                // the hosts' --pid-namespace
}

// generation is a runner instance's process as last seen.
type generation struct {
	gen int64
	pid int
}

const (
	chaosLocal   = 20
	chaosDaemons = 6
	chaosRunner  = 20
)

// write writes a plugins file in which about a third of the plugins
// change (so the apply replaces them and restarts their consumers).
func (c *chaos) write(round int, rnd *rand.Rand) {
	var b strings.Builder
	b.WriteString("name: chaos\nplugins:\n")
	env := func() string {
		if round > 0 && rnd.IntN(3) == 0 {
			return fmt.Sprintf(", env: {ROUND: %q}", strconv.Itoa(round))
		}
		return ""
	}
	for i := range chaosLocal {
		fmt.Fprintf(&b, "  l%02d: {command: [plug, serve, l%02d]%s}\n", i, i, env())
	}
	for i := range chaosDaemons {
		fmt.Fprintf(&b, "  d%02d: {command: [plug, daemon, d%02d], ready: {exec: [plug, sleep, 30ms]}%s}\n", i, i, env())
	}
	for i := range chaosRunner {
		fmt.Fprintf(&b, "  r%02d: {run: runner, command: [plug, serve, r%02d], uses: [l%02d]%s}\n", i, i, i%chaosLocal, env())
	}
	require.NoError(c.t, os.WriteFile(filepath.Join(c.dir, "plugins.yaml"), []byte(b.String()), 0o644))
}

func (c *chaos) env() []string {
	return append(os.Environ(), "GORACE=atexit_sleep_ms=0", "GRAFT_TEST_RUN="+c.run, "NO_COLOR=1", "GRAFT_PID_NAMESPACE="+c.pidNamespace)
}

func (c *chaos) graft(must bool, args ...string) string {
	cmd := exec.Command("graft", args...)
	cmd.Dir, cmd.Env = c.dir, c.env()
	out, err := cmd.CombinedOutput()
	if must {
		require.NoError(c.t, err, "graft %s:\n%s", strings.Join(args, " "), out)
	}
	return string(out)
}

// killHost kills the host with SIGKILL, once it runs, and waits until it
// is gone.
func (c *chaos) killHost() {
	dir := filepath.Join(c.dir, ".graft")
	var pid int
	waitUntil(c.t, 15*time.Second, func() bool { pid = hostPID(dir); return pid > 0 }, "a host runs")
	require.NoError(c.t, killAndWait(pid, 10*time.Second))
}

// identity is what a plugin process says of itself in its environment.
type identity struct{ id, gen string }

// plugins maps every live process of the test that carries a plugin
// identity (plugins, and what they forked) to it.
func (c *chaos) plugins() map[int]identity {
	out := map[int]identity{}
	for _, pid := range marked(c.run) {
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		var id identity
		for _, kv := range strings.Split(string(env), "\x00") {
			if v, ok := strings.CutPrefix(kv, "GRAFT_INSTANCE_ID="); ok {
				id.id = v
			}
			if v, ok := strings.CutPrefix(kv, "GRAFT_GENERATION="); ok {
				id.gen = v
			}
		}
		if id.id != "" {
			out[pid] = id
		}
	}
	return out
}

// check asserts, after round, that what runs is exactly what the status
// says, and that no generation repeated.
func (c *chaos) check(round int) {
	t := c.t
	cl, err := hostapi.NewClient(filepath.Join(c.dir, ".graft"))
	require.NoError(t, err)
	defer cl.Close()
	st, err := cl.Status(context.Background())
	require.NoError(t, err)
	require.Len(t, st.Plugins, chaosLocal+chaosDaemons+chaosRunner, "round %d: every plugin is listed", round)

	current := map[identity]bool{}
	for _, r := range st.Plugins {
		require.Equal(t, string(plan.Running), r.Status, "round %d: %s: %s", round, r.Name, r.LastError)
		require.True(t, pidAlive(r.PID), "round %d: %s's pid %d lives", round, r.Name, r.PID)
		id := identity{r.Instance, strconv.FormatInt(r.Generation, 10)}
		current[id] = true
		if strings.HasPrefix(r.Name, "r") {
			last, seen := c.gens[r.Instance]
			switch {
			case !seen:
			case last.pid == r.PID:
				require.Equal(t, last.gen, r.Generation, "round %d: %s: the same process, the same generation", round, r.Name)
			default:
				require.Greater(t, r.Generation, last.gen, "round %d: %s: a new process has a larger generation", round, r.Name)
			}
			c.gens[r.Instance] = generation{gen: r.Generation, pid: r.PID}
		}
	}
	// What an old instance left is gone by the time the new host has
	// applied: waited for a moment, since a family member the host stops
	// as a leftover is reaped asynchronously.
	var stale []string
	gone := poll(5*time.Second, func() bool {
		stale = nil
		for pid, id := range c.plugins() {
			if !current[id] {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
				stale = append(stale, fmt.Sprintf("pid %d (%s generation %s): %q; stat %s", pid, id.id, id.gen, cmdline, stat))
			}
		}
		return len(stale) == 0
	})
	if !gone {
		t.Fatalf("round %d: processes of old instances are left:\n  %s", round, strings.Join(stale, "\n  "))
	}
	for _, r := range st.Plugins {
		got := c.plugins()[r.PID]
		require.Equal(t, identity{r.Instance, strconv.FormatInt(r.Generation, 10)}, got,
			"round %d: %s's pid %d carries the instance the status names", round, r.Name, r.PID)
	}
}

func (c *chaos) cleanup() {
	if c.t.Failed() {
		b, _ := os.ReadFile(filepath.Join(c.dir, ".graft", hostapi.HostLog))
		c.t.Logf("--- host.log ---\n%s", b)
	}
	cleanup(c.dir)
}

// waitUntil polls cond until it holds, failing the test with what after d.
func waitUntil(t *testing.T, d time.Duration, cond func() bool, what string) {
	t.Helper()
	if !poll(d, cond) {
		t.Fatalf("not so after %s: %s", d, what)
	}
}

// poll polls cond until it holds, at most d, and reports whether it did.
func poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}
