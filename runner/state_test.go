//go:build linux

package runner

import (
	"bufio"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/fsfault"
	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/runnerapi"
)

// TestReadOnlyStateDir: a generation that cannot be written refuses the
// start and starts nothing; once the state dir is writable again the
// next generation is above every one handed out or tried, in this runner
// and the next. The journal is open for appends already, which a mode
// does not stop: it is made immutable.
func TestReadOnlyStateDir(t *testing.T) {
	h := newHarness(t, short)
	sess := h.open(0)
	first := h.start("ro", plugin(t, sess, "cooperative"))
	require.Equal(t, int64(1), first.Generation)

	restore := fsfault.Immutable(t, journalPath(h.dir))
	for _, name := range []string{"ro", "ro.new"} {
		_, status, e := h.tryStart(name, plugin(t, sess, "cooperative"))
		require.Equal(t, http.StatusInternalServerError, status, "%+v", e)
		assert.Equal(t, runnerapi.KindState, e.Kind)
		assert.Contains(t, e.Error, "nothing was started")
	}
	// The replaced process is gone, and nothing took its place.
	assert.False(t, alive(first.PID))
	assert.Empty(t, marked(t))
	assert.Empty(t, h.status().Instances)
	recs, _, err := h.r.state.records()
	require.NoError(t, err)
	assert.Empty(t, recs)
	for name, rec := range journalOf(t, h.dir).live {
		assert.Equal(t, "ro", name, "no record of a start refused")
		assert.Equal(t, int64(1), rec.Generation, "only the replaced one's, whose end could not be written either")
	}
	assert.Contains(t, h.log.String(), "start refused: the state dir cannot be written")

	restore()
	assert.Equal(t, int64(3), h.start("ro", plugin(t, sess, "cooperative")).Generation)
	assert.Equal(t, int64(2), h.start("ro.new", plugin(t, sess, "cooperative")).Generation)
	dir := h.dir
	h.close(t)
	h = newHarness(t, short, dir)
	sess = h.open(0)
	assert.Equal(t, int64(4), h.start("ro", plugin(t, sess, "cooperative")).Generation)
}

// TestWriteFailsPartWay: a write that fails after its entry was appended
// (its sync) refuses the start; the number it tried is never handed out,
// in this runner or the next.
func TestWriteFailsPartWay(t *testing.T) {
	h := newHarness(t, short)
	sess := h.open(0)
	require.Equal(t, int64(1), h.start("part", plugin(t, sess, "cooperative")).Generation)

	// The journal fails its sync, after the real one.
	real := syncFile
	t.Cleanup(func() { syncFile = real })
	failWith := func(fail error) func(*os.File) error {
		return func(f *os.File) error {
			real(f)
			return fail
		}
	}
	syncFile = failWith(&os.PathError{Op: "sync", Path: journalPath(h.dir), Err: syscall.EIO})
	_, status, e := h.tryStart("part", plugin(t, sess, "cooperative"))
	require.Equal(t, http.StatusInternalServerError, status)
	assert.Equal(t, runnerapi.KindState, e.Kind)
	assert.Contains(t, e.Error, "write generation 2 of part")
	_, status, _ = h.tryStart("part", plugin(t, sess, "cooperative"))
	require.Equal(t, http.StatusInternalServerError, status, "generation 3 fails too")
	syncFile = real

	assert.Equal(t, int64(4), h.start("part", plugin(t, sess, "cooperative")).Generation)
	// After a failure and a restart, the number on disk is the one tried.
	syncFile = failWith(errors.New("sync: input/output error"))
	_, status, _ = h.tryStart("part", plugin(t, sess, "cooperative"))
	require.Equal(t, http.StatusInternalServerError, status)
	syncFile = real
	dir := h.dir
	h.close(t)
	h = newHarness(t, short, dir)
	sess = h.open(0)
	assert.Equal(t, int64(6), h.start("part", plugin(t, sess, "cooperative")).Generation)
}

// TestRecovery: at Open, a recorded process that still runs (found by
// pid and start time, or by its invocation id) is stopped before its
// instance starts again, which answers 409 unconfirmed meanwhile; a
// record whose pid now names another process never gets it signalled.
func TestRecovery(t *testing.T) {
	dir := t.TempDir()
	st := openTestState(t, dir)
	boot, err := proc.BootID()
	require.NoError(t, err)

	// Invocation ids are looked for machine-wide: each test run has its own.
	invA, invB, invC := uuid.NewString(), uuid.NewString(), uuid.NewString()

	// A stubborn leftover of generation 7, in a session of its own.
	left, leftDone := startLeftover(t, invA)
	start, err := proc.StartTime(left.Process.Pid)
	require.NoError(t, err)
	require.NoError(t, st.writeRecord(record{Instance: "rec.a", Generation: 7, Invocation: invA, PID: left.Process.Pid, StartTime: start, BootID: boot}))

	// A process the record's pid names now, with another start time.
	other := exec.Command("sleep", "30")
	require.NoError(t, other.Start())
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	otherStart, err := proc.StartTime(other.Process.Pid)
	require.NoError(t, err)
	require.NoError(t, st.writeRecord(record{Instance: "rec.b", Generation: 2, Invocation: invB, PID: other.Process.Pid, StartTime: otherStart - 1, BootID: boot}))
	// A start cut short before it spawned; and a file no runner wrote,
	// where an older runner kept its records.
	require.NoError(t, st.writeRecord(record{Instance: "rec.c", Generation: 1, Invocation: invC, BootID: boot}))
	require.NoError(t, os.Mkdir(filepath.Join(dir, recordsDir), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, recordsDir, "junk.json"), []byte("{"), 0o600))
	require.NoError(t, st.close())

	began := time.Now()
	h := newHarness(t, Options{Lease: 5 * time.Second, Grace: 500 * time.Millisecond}, dir)
	sess := h.open(0)
	_, status, e := h.tryStart("rec.a", plugin(t, sess, "cooperative"))
	require.Equal(t, http.StatusConflict, status, "%+v", e)
	assert.Equal(t, runnerapi.KindUnconfirmed, e.Kind)
	assert.Contains(t, e.Error, "generation 7 of rec.a may still be running")
	s := h.status()
	require.Len(t, s.Instances, 1)
	assert.Equal(t, runnerapi.InstanceStatus{Instance: "rec.a", Generation: 7, PID: left.Process.Pid, Status: runnerapi.StatusUnconfirmed, StartedAt: s.Instances[0].StartedAt}, s.Instances[0])

	select {
	case <-leftDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the leftover was not stopped")
	}
	assert.GreaterOrEqual(t, time.Since(began), 500*time.Millisecond, "SIGTERM, then SIGKILL after grace")
	assert.Equal(t, "signal: killed", left.ProcessState.String())
	require.Eventually(t, func() bool { return len(h.status().Instances) == 0 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, int64(8), h.start("rec.a", plugin(t, sess, "cooperative")).Generation)
	assert.Equal(t, int64(3), h.start("rec.b", plugin(t, sess, "cooperative")).Generation)
	assert.True(t, alive(other.Process.Pid), "a pid of another start time is never signalled")

	// A process in the runner's PID namespace gets no pid entry: the
	// namespace dies with the runner.
	inNamespace := h.r.local.Isolation().Namespace
	var names []string
	for name, rec := range journalOf(t, dir).live {
		assert.NotEmpty(t, rec.Invocation)
		assert.Equal(t, inNamespace, rec.PID == 0, "pid %d", rec.PID)
		assert.Equal(t, inNamespace, rec.StartTime == 0, "start time %d", rec.StartTime)
		names = append(names, name)
	}
	sort.Strings(names)
	assert.Equal(t, []string{"rec.a", "rec.b"}, names, "the records of the processes that run, and no other")
	assert.Contains(t, h.log.String(), "removing a record that cannot be read")
	m := h.scrape()
	assert.Equal(t, 1.0, m[`graft_runner_recoveries_total{result="stopped"}`], "rec.a")
	assert.Equal(t, 2.0, m[`graft_runner_recoveries_total{result="gone"}`], "rec.b, whose pid names another process, and rec.c")
}

// startLeftover starts a stubborn plugin of generation 7 of rec.a with
// invocation id inv, in a session of its own, as a killed runner leaves
// one, and returns it once it ignores SIGTERM, with a channel closed once
// it has exited. The test's cleanup kills it.
func startLeftover(t *testing.T, inv string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	left := exec.Command(os.Args[0])
	left.Env = append(os.Environ(), roleEnv+"=stubborn", EnvInvocation+"="+inv, markEnv+"="+mark(t), "GRAFT_INSTANCE_ID=rec.a", "GRAFT_GENERATION=7")
	left.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, w, err := os.Pipe()
	require.NoError(t, err)
	left.Stdout = w
	require.NoError(t, left.Start())
	w.Close()
	t.Cleanup(func() { out.Close() })
	lines := bufio.NewReader(out)
	line, err := lines.ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "ready", "its handlers are set: it ignores SIGTERM")
	go io.Copy(io.Discard, lines) // until it exits
	leftDone := make(chan struct{})
	go func() { left.Wait(); close(leftDone) }()
	t.Cleanup(func() { left.Process.Kill(); <-leftDone })
	return left, leftDone
}

// TestFullStateDir: a state dir on a file system with no space left
// refuses starts and starts nothing; once there is space again the next
// generation is above every one handed out or tried. The runner daemon
// runs in a mount namespace of its own, with its state dir on a small
// tmpfs, so the disk is full for real; the test reaches that file system
// through /proc/PID/root. Root makes the namespace; another user makes a
// user namespace first, in which it may mount.
func TestFullStateDir(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(t.TempDir(), "r.sock")
	attr := &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	if uid, gid := os.Geteuid(), os.Getegid(); uid != 0 {
		attr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
		}
	}
	d, line := launchDaemon(t, dir, sock, 200*time.Millisecond, attr, "RUNNER_TEST_TMPFS=256k")
	require.Equal(t, "ready\n", line, "a runner daemon on a tmpfs in a mount namespace of its own: %s", d.log)
	state := filepath.Join("/proc", strconv.Itoa(d.cmd.Process.Pid), "root", dir)
	sess := d.open(0)
	first := d.start("full", plugin(t, sess, "cooperative"))
	require.Equal(t, int64(1), first.Generation)

	// Fill the file system to its last byte.
	filler, err := os.Create(filepath.Join(state, "filler"))
	require.NoError(t, err)
	chunk := make([]byte, 4096)
	for {
		if _, err := filler.Write(chunk); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			break
		}
	}
	for _, n := range []int{512, 64, 1} {
		for {
			if _, err := filler.Write(chunk[:n]); err != nil {
				break
			}
		}
	}
	require.NoError(t, filler.Close())

	// The journal's appends fill the page it has; then a start needs
	// space the file system does not have. Each start of full.new
	// replaces the one before.
	var tried int64 // full.new's generations taken
	var refused []int64
	for len(refused) < 2 {
		require.Less(t, tried, int64(200), "appends fail once the journal's last page is full")
		st, status, e := d.tryStart("full.new", plugin(t, sess, "cooperative"))
		tried++
		if status == http.StatusOK {
			require.Empty(t, refused, "once refused, refused again: %+v", st)
			require.Equal(t, tried, st.Generation)
			continue
		}
		require.Equal(t, http.StatusInternalServerError, status, "%+v", e)
		assert.Equal(t, runnerapi.KindState, e.Kind)
		assert.Contains(t, e.Error, "no space left on device")
		assert.Contains(t, e.Error, "nothing was started")
		refused = append(refused, tried)
	}
	// The daemon's log comes through a pipe: the line may follow the answer.
	assert.True(t, d.log.WaitFor("start refused: the state dir cannot be written", 5*time.Second), "the refusal is logged: %s", d.log)
	ps := marked(t)
	require.Len(t, ps, 1, "nothing runs but the first")
	assert.Equal(t, first.PID, ps[0].pid)
	rp := newReplay()
	require.NoError(t, readJournal(journalPath(state), rp))
	assert.Equal(t, int64(1), rp.live["full"].Generation)
	for _, gen := range refused {
		assert.NotEqual(t, gen, rp.live["full.new"].Generation, "no record of a start refused")
	}

	require.NoError(t, os.Remove(filepath.Join(state, "filler")))
	assert.Equal(t, tried+1, d.start("full.new", plugin(t, sess, "cooperative")).Generation, "above the ones it tried")
	assert.Equal(t, int64(2), d.start("full", plugin(t, sess, "cooperative")).Generation)
}

// TestRemoveRecordOfItsGeneration: the end of one generation never
// removes the record of another.
func TestRemoveRecordOfItsGeneration(t *testing.T) {
	dir := t.TempDir()
	st := openTestState(t, dir)
	require.NoError(t, st.writeRecord(record{Instance: "rm", Generation: 2, Invocation: "inv"}))
	require.NoError(t, st.removeRecord("rm", 1))
	recs, _, err := st.records()
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.NoError(t, st.removeRecord("rm", 2))
	recs, _, err = st.records()
	require.NoError(t, err)
	assert.Empty(t, recs)
	require.NoError(t, st.removeRecord("rm", 2), "a record already gone")
	assert.Empty(t, journalOf(t, dir).live, "its end is in the journal")
}

// TestGenerationExhausted: an instance that has had generation
// math.MaxInt64 gets no next one: its start is refused, 409 exhausted,
// naming the instance, before its running process is replaced, and in
// the next runner too; generations never wrap to negative. (The state
// dir is made in the old layout, a file a generation.)
func TestGenerationExhausted(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "generations"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "generations", escape("big")),
		[]byte(strconv.FormatInt(math.MaxInt64-1, 10)+"\n"), 0o600))
	h := newHarness(t, short, dir)
	sess := h.open(0)
	last := h.start("big", plugin(t, sess, "cooperative"))
	require.Equal(t, int64(math.MaxInt64), last.Generation, "the largest is handed out")

	_, status, e := h.tryStart("big", plugin(t, sess, "cooperative"))
	require.Equal(t, http.StatusConflict, status, "%+v", e)
	assert.Equal(t, runnerapi.KindExhausted, e.Kind)
	assert.Equal(t, "start big: instance big has had generation 9223372036854775807, the largest there is: no later one can be handed out: nothing was started", e.Error)
	assert.True(t, alive(last.PID), "the process of the last generation was not replaced")
	require.Len(t, h.status().Instances, 1)
	assert.Contains(t, h.log.String(), "start refused: no generation is left")
	assert.Equal(t, int64(math.MaxInt64), journalOf(t, dir).last["big"])

	h.close(t)
	h = newHarness(t, short, dir)
	sess = h.open(0)
	_, status, e = h.tryStart("big", plugin(t, sess, "cooperative"))
	require.Equal(t, http.StatusConflict, status, "%+v", e)
	assert.Equal(t, runnerapi.KindExhausted, e.Kind)
	assert.Equal(t, int64(1), h.start("big.next", plugin(t, sess, "cooperative")).Generation, "other instances start")

	var exhausted *ExhaustedError
	_, err := h.r.state.next("big", record{Invocation: "inv"}, false)
	require.ErrorAs(t, err, &exhausted)
	assert.Contains(t, exhausted.Hint(), "another instance name")
}
