package proc

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
)

// counting is a plugin that writes a numbered line every 10 ms, and
// records a signal it gets (other than the KILL that ends it).
const counting = `trap 'echo got-term; exit 0' TERM; trap 'echo got-hup' HUP; i=0; while :; do i=$((i+1)); echo "n $i"; sleep 0.01; done`

// handoverIn is a handover in a temporary directory.
func handoverIn(t *testing.T) Handover {
	dir := t.TempDir()
	return Handover{Socket: filepath.Join(dir, "init.sock"), Record: filepath.Join(dir, "init.log")}
}

// holdingSpawner is a Spawner whose init holds its plugins for 5 seconds
// at h, closed when t ends; it ends t where no namespace can be made.
func holdingSpawner(t *testing.T, h Handover) *Spawner {
	s := NewSpawner()
	t.Cleanup(s.Close)
	s.SetHandover(h, 5*time.Second)
	testsupport.NeedNamespace(t, s.Isolation().Err)
	return s
}

// startHeld starts script in s's namespace with its output on a pipe whose
// read end the init keeps too, and returns the process and the read end.
func startHeld(t *testing.T, s *Spawner, script, tag string, hold bool) (*Process, *os.File) {
	t.Helper()
	r, w, err := OutputPipe()
	require.NoError(t, err)
	marker := "GRAFT_INSTANCE_ID=" + tag
	p, err := s.Start(Cmd{Argv: []string{"sh", "-c", script}, Dir: t.TempDir(), Env: append(os.Environ(), marker),
		Output: w, Reader: r, Marker: marker, Isolate: true, Tag: tag, Hold: hold,
		StopSignal: syscall.SIGTERM, StopTimeout: time.Second})
	w.Close()
	require.NoError(t, err)
	return p, r
}

// exits fails the test unless p exits within d.
func exits(t *testing.T, p *Process, d time.Duration, why string) {
	t.Helper()
	select {
	case <-p.Exited():
	case <-time.After(d):
		t.Fatal(why)
	}
}

// numbers reads the "n N" lines of r until it has seen n of them after the
// first, and checks that none is missing or repeated.
func numbers(t *testing.T, r *bufio.Reader, want int, last *int) {
	t.Helper()
	for seen := 0; seen < want; {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "n ")
		require.True(t, ok, "a line %q: no signal may reach it", line)
		n, err := strconv.Atoi(rest)
		require.NoError(t, err)
		if *last != 0 {
			require.Equal(t, *last+1, n, "no line missing or repeated")
		}
		*last = n
		seen++
	}
}

// TestHandover: an init told to hold its plugins keeps them when its host
// goes, its output waiting in the pipe; the next Spawner that attaches
// gets each with its pid, its tag and the read end of its pipe, and reads
// on where the first stopped, no line lost; a plugin started without Hold
// is killed as soon as its host goes, and the kill recorded.
func TestHandover(t *testing.T) {
	h := handoverIn(t)
	first := holdingSpawner(t, h)
	kept, keptOut := startHeld(t, first, counting, "kept", true)
	dropped, droppedOut := startHeld(t, first, counting, "dropped", false)
	droppedOut.Close()

	out := bufio.NewReader(keptOut)
	var last int
	numbers(t, out, 5, &last)
	// The host goes: its socket ends, without a quit. What it read of the
	// pipe it has; the rest waits there.
	first.ns.close()
	keptOut.Close()
	exits(t, dropped, 5*time.Second, "a plugin without Hold outlived its host")
	time.Sleep(100 * time.Millisecond) // lines pile up in the pipe meanwhile

	second := NewSpawner()
	defer second.Close()
	second.SetHandover(h, 5*time.Second)
	held, err := second.Attach()
	require.NoError(t, err)
	require.Len(t, held, 1, "the plugin without Hold is not kept")
	assert.Equal(t, "kept", held[0].Tag)
	assert.WithinDuration(t, time.Now(), held[0].HostGone, 5*time.Second, "when its host was gone")
	assert.Equal(t, kept.Pid, held[0].Process.Pid, "the same process")
	assert.True(t, held[0].Process.Isolated())
	require.NotNil(t, held[0].Output)
	defer held[0].Output.Close()
	numbers(t, bufio.NewReader(held[0].Output), 20, &last)

	// The second host stops it as any: its group signalled, reaped
	// through the init.
	p := held[0].Process
	require.NoError(t, p.SignalGroup(syscall.SIGKILL))
	st, err := p.Reap()
	require.NoError(t, err)
	assert.Equal(t, syscall.SIGKILL, st.Signal)

	b, err := os.ReadFile(h.Record)
	require.NoError(t, err)
	stops := ParseHeldStops(b)
	require.Len(t, stops, 1, "%s", b)
	assert.Equal(t, "dropped", stops[0].Tag)
	assert.Equal(t, "killed", stops[0].Outcome, "killed at once, as the kernel kills a namespace")
	assert.Equal(t, "signal: SIGKILL", stops[0].Status)
	kept.pidfd.Close()
	dropped.pidfd.Close()
}

// TestHandoverWindowPasses: with no host within the window, the init stops
// every plugin itself (the one that ignores its stop signal killed after
// its stop timeout), records each stop and ends.
func TestHandoverWindowPasses(t *testing.T) {
	h := handoverIn(t)
	s := NewSpawner()
	defer s.Close()
	s.SetHandover(h, 300*time.Millisecond)
	testsupport.NeedNamespace(t, s.Isolation().Err)
	polite, r1 := startHeld(t, s, counting, "polite", true)
	deaf, r2 := startHeld(t, s, `trap '' TERM; echo up; while :; do sleep 0.01; done`, "deaf", true)
	r1.Close()
	r2.Close()
	init := s.ns
	init.close()
	for _, p := range []*Process{polite, deaf} {
		exits(t, p, 10*time.Second, "a plugin outlived the window")
	}
	exits(t, init.proc, 10*time.Second, "the init outlived the window")
	b, err := os.ReadFile(h.Record)
	require.NoError(t, err)
	got := map[string]HeldStop{}
	for _, s := range ParseHeldStops(b) {
		got[s.Tag] = s
	}
	require.Len(t, got, 2, "%s", b)
	assert.Equal(t, "exited", got["polite"].Outcome)
	assert.Equal(t, "killed", got["deaf"].Outcome)
	assert.Equal(t, "signal: SIGKILL", got["deaf"].Status)
	assert.WithinDuration(t, got["polite"].HostGone, got["deaf"].HostGone, time.Millisecond, "one host gone")
	assert.GreaterOrEqual(t, got["deaf"].At.Sub(got["deaf"].HostGone), 300*time.Millisecond+time.Second, "after the window and its stop timeout")
	polite.pidfd.Close()
	deaf.pidfd.Close()
	n, err := second(h)
	require.NoError(t, err)
	assert.Zero(t, n, "no init waits any more")
}

// second is how many plugins a Spawner attaching at h gets.
func second(h Handover) (int, error) {
	s := NewSpawner()
	defer s.Close()
	s.SetHandover(h, 0)
	held, err := s.Attach()
	return len(held), err
}

// TestHandoverQuit: an init told to hold, whose host then quits (its
// orderly end, its plugins stopped), keeps nothing and ends.
func TestHandoverQuit(t *testing.T) {
	h := handoverIn(t)
	s := NewSpawner()
	s.SetHandover(h, 5*time.Second)
	testsupport.NeedNamespace(t, s.Isolation().Err)
	p, r := startHeld(t, s, counting, "x", true)
	r.Close()
	require.NoError(t, p.SignalGroup(syscall.SIGKILL))
	_, err := p.Reap()
	require.NoError(t, err)
	init := s.ns
	s.Close()
	exits(t, init.proc, 5*time.Second, "the init outlived its host's orderly end")
	n, err := second(h)
	require.NoError(t, err)
	assert.Zero(t, n)
}

// TestInitKeepsReadEndsOffItsTable: the init hands each plugin's read end
// to its keeper's thread (keepBatch at a time), whose descriptor table is
// its own, so that the table its forks copy stays a handful long however
// many plugins run (nskeep_linux.go); the read ends, kept there, still
// hold each pipe open once the host has closed its own, and a plugin that
// writes on meets no pipe without a reader.
func TestInitKeepsReadEndsOffItsTable(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	testsupport.NeedNamespace(t, s.Isolation().Err)
	const n = 2 * keepBatch // handed over whole
	var ps []*Process
	for i := range n {
		p, r := startHeld(t, s, counting, "p"+strconv.Itoa(i), false)
		r.Close() // the host's: the keeper's copy holds the pipe open
		ps = append(ps, p)
	}
	init := s.ns.proc.Pid
	fds := func(dir string) int {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		return len(entries)
	}
	// threads is the most descriptors a thread of the init holds.
	threads := func() int {
		tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(init), "task"))
		require.NoError(t, err)
		most := 0
		for _, task := range tasks {
			most = max(most, fds(filepath.Join("/proc", strconv.Itoa(init), "task", task.Name(), "fd")))
		}
		return most
	}
	// The last batch is handed over after the last start's answer.
	own, most := 0, 0
	if !assert.Eventually(t, func() bool {
		own, most = fds(filepath.Join("/proc", strconv.Itoa(init), "fd")), threads()
		return own < keepBatch/2 && most >= n
	}, 5*time.Second, 10*time.Millisecond, "the init's own table holds no read end, a thread of the init holds them all") {
		t.Logf("the init's table: %d descriptors; the most a thread of it holds: %d", own, most)
	}

	time.Sleep(100 * time.Millisecond) // each writes a line every 10 ms meanwhile
	for _, p := range ps {
		select {
		case <-p.Exited():
			t.Fatal("a plugin whose host closed its read end died writing")
		default:
		}
		require.NoError(t, p.SignalGroup(syscall.SIGKILL))
		st, err := p.Reap()
		require.NoError(t, err)
		assert.Equal(t, syscall.SIGKILL, st.Signal)
		p.pidfd.Close()
	}
	// Reaped, each one's read end is closed, keepBatch at a time.
	assert.Eventually(t, func() bool {
		return threads() < keepBatch/2
	}, 5*time.Second, 10*time.Millisecond, "the read ends of the plugins reaped are closed")
}

// TestHandoverOfKeptReadEnds: the next host gets the read end of every
// plugin held, those the keeper's thread holds (each batch of keepBatch)
// and those the init has not handed it yet, and reads each one's output
// on, though the first host closed its own read ends as it went.
func TestHandoverOfKeptReadEnds(t *testing.T) {
	h := handoverIn(t)
	first := holdingSpawner(t, h)
	const n = keepBatch + 3
	var ps []*Process
	for i := range n {
		p, r := startHeld(t, first, counting, "p"+strconv.Itoa(i), true)
		r.Close()
		ps = append(ps, p)
	}
	first.ns.close()

	second := NewSpawner()
	defer second.Close()
	second.SetHandover(h, 5*time.Second)
	held, err := second.Attach()
	require.NoError(t, err)
	require.Len(t, held, n)
	for _, k := range held {
		require.NotNil(t, k.Output, "the read end of %s", k.Tag)
		var last int
		numbers(t, bufio.NewReader(k.Output), 2, &last)
		k.Output.Close()
		require.NoError(t, k.Process.SignalGroup(syscall.SIGKILL))
		_, err := k.Process.Reap()
		require.NoError(t, err)
	}
	for _, p := range ps {
		p.pidfd.Close()
	}
}
