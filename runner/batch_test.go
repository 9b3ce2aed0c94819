//go:build linux

package runner

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runnerapi"
)

// The group commit of the journal (commit.go): starts at once share its
// syncs; a runner killed among them, and a sync that fails under them.

// TestKill9MidBatch: a runner daemon killed with SIGKILL while starts and
// replacements of several instances run at once, and started again on
// the same state dir. No generation was told twice to a client, and none
// runs twice; every process left running (without PID namespaces, each
// plugin's grandchild in a session of its own outlives the runner) has
// its record, naming its generation;
// the next runner stops each before its instance starts again, with a
// generation above every one told or run.
func TestKill9MidBatch(t *testing.T) {
	const workers = 6
	dir := t.TempDir()
	env := []string{noNamespaceEnv + "=1"}
	t.Cleanup(func() { killMarked(t) })
	d, line := launchDaemon(t, dir, filepath.Join(dir, "r.sock"), 200*time.Millisecond, nil, env...)
	require.Equal(t, "ready\n", line, "log: %s", d.log)
	sess := d.open(0)

	told, answered := startAtOnce(t, d, sess, workers)
	require.Eventually(t, func() bool { return answered() >= 4*workers }, 30*time.Second, time.Millisecond)
	d.kill()
	told.wg.Wait()
	top := uniqueGenerations(t, told.gens)

	// What is left: the plugins' grandchildren. (The plugins themselves
	// die with the runner, from their parent-death signal.)
	left := leftRecorded(t, dir, top)
	t.Logf("%d starts answered, %d processes left running", answered(), len(left))

	d = launchAgain(t, dir, env)
	sess = d.open(0)
	for i := range workers {
		name := fmt.Sprintf("mb.%d", i)
		var st runnerapi.Started
		require.Eventually(t, func() bool {
			var status int
			st, status, _ = d.tryStart(name, plugin(t, sess, "cooperative"))
			return status == http.StatusOK
		}, 15*time.Second, 10*time.Millisecond, "%s starts once what was left of it is stopped", name)
		assert.Greater(t, st.Generation, top[name], "%s: above every generation told or run", name)
	}
	for _, p := range left {
		assert.False(t, alive(p.pid), "%s generation %d was stopped by the next runner", p.instance, p.gen)
	}
	if len(left) > 0 {
		assert.True(t, d.log.WaitFor("a recorded process may still run", 5*time.Second), "logged: %s", d.log)
	}
	d.stop(t)
}

// batchTold is what a batch of starts at once was told, by instance.
type batchTold struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	gens map[string][]int64
}

// startAtOnce starts instances mb.0 to mb.(workers-1) again and again at
// once, each a plugin whose grandchild outlives the runner, until the
// runner is killed; answered counts the starts answered so far.
func startAtOnce(t *testing.T, d *daemon, sess string, workers int) (tl *batchTold, answered func() int) {
	tl = &batchTold{gens: map[string][]int64{}}
	for i := range workers {
		name := fmt.Sprintf("mb.%d", i)
		// Ready once its grandchild runs: what the runner's death leaves.
		req := plugin(t, sess, "leaver")
		req.Ready = &launch.Ready{Log: "^daemon ", Timeout: launch.Duration(10000 * time.Millisecond)}
		tl.wg.Go(func() {
			for {
				var st runnerapi.Started
				status, _, err := d.try("POST", "/v1/instances/"+name+"/start", req, &st)
				if err != nil || status != http.StatusOK {
					return // killed
				}
				tl.mu.Lock()
				tl.gens[name] = append(tl.gens[name], st.Generation)
				tl.mu.Unlock()
			}
		})
	}
	return tl, func() int {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		n := 0
		for _, gens := range tl.gens {
			n += len(gens)
		}
		return n
	}
}

// uniqueGenerations checks that no instance was told a generation twice,
// and returns the highest each was told.
func uniqueGenerations(t *testing.T, told map[string][]int64) map[string]int64 {
	top := map[string]int64{}
	for name, gens := range told {
		seen := map[int64]bool{}
		for _, g := range gens {
			require.False(t, seen[g], "%s: generation %d told twice: %v", name, g, gens)
			seen[g] = true
			top[name] = max(top[name], g)
		}
	}
	return top
}

// leftRecorded returns the processes a killed runner left (the plugins'
// grandchildren), checks that each instance left one at most, of a
// generation at or above every one told (raising top to it), and that the
// journal in dir records it.
func leftRecorded(t *testing.T, dir string, top map[string]int64) []markedProc {
	var left []markedProc
	for _, p := range marked(t) {
		if p.role == "quiet" {
			left = append(left, p)
		}
	}
	byInstance := map[string]markedProc{}
	for _, p := range left {
		other, dup := byInstance[p.instance]
		require.False(t, dup, "%s: two processes left, generations %d and %d", p.instance, p.gen, other.gen)
		byInstance[p.instance] = p
		require.GreaterOrEqual(t, p.gen, top[p.instance], "%s: a process left of a generation below one told", p.instance)
		top[p.instance] = p.gen
		rec, ok := journalOf(t, dir).live[p.instance]
		require.True(t, ok, "the record of %s generation %d, pid %d", p.instance, p.gen, p.pid)
		assert.Equal(t, p.gen, rec.Generation, "%s: its record names the process left", p.instance)
	}
	return left
}

// launchAgain starts a runner daemon on dir again, serving on a socket
// of its own.
func launchAgain(t *testing.T, dir string, env []string) *daemon {
	t.Helper()
	d, line := launchDaemon(t, dir, filepath.Join(dir, "r2.sock"), 200*time.Millisecond, nil, env...)
	require.Equal(t, "ready\n", line, "log: %s", d.log)
	return d
}

// stop stops the daemon as graft runner is stopped, SIGTERM, which stops
// its processes first.
func (d *daemon) stop(t *testing.T) {
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-d.done:
	case <-time.After(15 * time.Second):
		t.Errorf("the runner daemon did not stop on SIGTERM: %s", d.log)
	}
	d.hc.CloseIdleConnections()
}

// killMarked kills what is left of the test's processes.
func killMarked(t *testing.T) {
	for _, p := range marked(t) {
		syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// TestBatchSyncFails: a sync of the journal that fails fails every start
// of the group it covered, each naming the cause, and starts nothing of
// them; none of their generations is handed out again. A sync does not
// fail on demand on a real disk, so the test fails it, after the real
// sync, as the disk would answer.
func TestBatchSyncFails(t *testing.T) {
	const batch = 4
	h := newHarness(t, short)
	sess := h.open(0)
	real := syncFile
	t.Cleanup(func() { syncFile = real })
	var (
		mu    sync.Mutex
		calls int
	)
	held, gate := make(chan struct{}), make(chan struct{})
	syncFile = func(f *os.File) error {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		err := real(f)
		switch n {
		case 1: // the first group: the lone start, which leads
			close(held)
			<-gate
		case 2: // the next
			err = &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
		}
		return err
	}

	first := make(chan runnerapi.Started, 1)
	go func() {
		var st runnerapi.Started
		h.try("POST", "/v1/instances/lone/start", plugin(t, sess, "cooperative"), &st)
		first <- st
	}()
	<-held
	type answer struct {
		status int
		e      runnerapi.ErrorBody
	}
	answers := make(chan answer, batch)
	for i := range batch {
		go func() {
			status, e, _ := h.try("POST", fmt.Sprintf("/v1/instances/b.%d/start", i), plugin(t, sess, "cooperative"), nil)
			answers <- answer{status, e}
		}()
	}
	require.Eventually(t, func() bool {
		c := &h.r.state.commits
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.queue) == batch
	}, 10*time.Second, time.Millisecond, "the starts queue behind the first group")
	close(gate)

	assert.Equal(t, int64(1), (<-first).Generation, "the first group synced")
	for range batch {
		a := <-answers
		require.Equal(t, http.StatusInternalServerError, a.status, "%+v", a.e)
		assert.Equal(t, runnerapi.KindState, a.e.Kind)
		assert.Regexp(t, `^start b\.\d: write generation 1 of b\.\d: sync .*/journal: input/output error: nothing was started$`, a.e.Error)
	}
	mu.Lock()
	assert.Equal(t, 2, calls, "one sync of the journal for each group")
	mu.Unlock()
	syncFile = real

	ps := marked(t)
	require.Len(t, ps, 1, "nothing of the failed group started")
	assert.Equal(t, "lone", ps[0].instance)
	live := journalOf(t, h.dir).live
	require.Len(t, live, 1, "no record of the failed group is left")
	assert.Contains(t, live, "lone")
	for i := range batch {
		assert.Equal(t, int64(2), h.start(fmt.Sprintf("b.%d", i), plugin(t, sess, "cooperative")).Generation, "above the one that failed")
	}
}
