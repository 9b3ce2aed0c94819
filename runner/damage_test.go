//go:build linux

package runner

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/runnerapi"
)

// damages are the ways a start entry of the journal is damaged in these
// tests: a byte of its checksummed part flipped, so that its sum no
// longer matches; where it falls decides what of the entry can be read.
var damages = []struct {
	name string
	at   string // the bytes of the entry's JSON whose first is flipped
	why  string // what the report says of the entry
}{
	{"its invocation id", `"invocation":"`, "bad checksum"},
	{"its instance", `"instance":"`, "bad checksum"},
	{"its JSON", `{"op"`, "bad checksum"},
	{"its op", `"op":"`, "bad checksum"},
	{"its checksum", "", "bad checksum"},
}

// TestRecoverDamagedStart: a runner without PID namespaces starts a
// plugin whose grandchild leaves for a session of its own, and is killed
// with SIGKILL; the start entry of that plugin in its journal is damaged
// (a byte flipped) before the next runner opens the state dir. The
// grandchild, found by the invocation id of its start (in the pid entry
// that followed, or in what can be read of the damaged entry), is
// stopped before its instance starts again, and the runner reports the
// damaged entry, naming the journal, the entry, and the process it
// stopped.
func TestRecoverDamagedStart(t *testing.T) {
	for _, dmg := range damages {
		t.Run(dmg.name, func(t *testing.T) {
			dir, entry, escaped := damagedRun(t, true, dmg.at)
			h := newHarness(t, Options{Lease: short.Lease, Grace: short.Grace, NoNamespace: true}, dir)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the runner's log: %s", h.log)
				}
			})
			testsupport.WaitGone(t, 10*time.Second, escaped)
			want := fmt.Sprintf("journal entry %d of k.dmg is damaged (%s); found its process %d by invocation id and stopped it", entry, dmg.why, escaped)
			require.True(t, h.log.WaitFor(want, 5*time.Second), "want %q in the log: %s", want, h.log)
			assert.Contains(t, h.log.String(), "journal="+journalPath(dir), "the report names the journal")
			m := h.scrape()
			assert.Equal(t, 1.0, m["graft_runner_damaged_entries_total"], "counted")
			assert.Equal(t, 1.0, m[`graft_runner_recoveries_total{result="stopped"}`], "its process stopped")

			sess := h.open(0)
			st := h.start("k.dmg", plugin(t, sess, "cooperative"))
			assert.Equal(t, int64(2), st.Generation, "its generation was taken")
		})
	}
}

// TestRecoverDamagedExtra: a damaged start entry, the only one naming
// its process (its pid entry lost), followed by a whole start of a later
// generation of its instance, whose process is gone: both are recovered
// together, the process the damaged entry names stopped, and the
// instance starts again only once it is gone.
func TestRecoverDamagedExtra(t *testing.T) {
	dir, n, escaped := damagedRun(t, true, `"bootID":"`)
	path := journalPath(dir)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var kept [][]byte
	for _, line := range bytes.SplitAfter(data, []byte{'\n'}) {
		if e, ok := decodeEntry(bytes.TrimSuffix(line, []byte{'\n'})); ok && e.Op == opPID && e.Instance == "k.dmg" {
			continue // lost
		}
		kept = append(kept, line)
	}
	later, err := encodeEntry(entry{Op: opStart, record: record{Instance: "k.dmg", Generation: 2, Invocation: "gone-" + mark(t)}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(bytes.Join(kept, nil), later...), 0o600))

	h := newHarness(t, Options{Lease: short.Lease, Grace: short.Grace, NoNamespace: true}, dir)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the runner's log: %s", h.log)
		}
	})
	sess := h.open(0)
	start := func() bool {
		st, status, e := h.tryStart("k.dmg", plugin(t, sess, "cooperative"))
		if status == http.StatusConflict {
			assert.Equal(t, runnerapi.KindUnconfirmed, e.Kind, "%+v", e)
			return false
		}
		require.Equal(t, http.StatusOK, status, "%+v", e)
		assert.False(t, alive(escaped), "stopped before its instance started again")
		assert.Equal(t, int64(3), st.Generation)
		return true
	}
	require.Eventually(t, start, 10*time.Second, 10*time.Millisecond)
	want := fmt.Sprintf("journal entry %d of k.dmg is damaged (bad checksum); found its process %d by invocation id and stopped it", n, escaped)
	assert.True(t, h.log.WaitFor(want, 5*time.Second), "want %q in the log: %s", want, h.log)
	m := h.scrape()
	assert.Equal(t, 1.0, m[`graft_runner_recoveries_total{result="stopped"}`])
	assert.Equal(t, 2.0, m[`graft_runner_recoveries_total{result="gone"}`], "k.other and generation 2 of k.dmg")
	assert.Empty(t, journalOf(t, dir).damaged, "compacted once it was gone")
}

// TestRecoverDamagedStartInNamespace: the same with the runner's PID
// namespace, where the kernel kills everything of the plugin with the
// runner and no pid entry is written: the next runner still looks for
// its process, by what it can read of the damaged entry, finds it gone,
// and says so.
func TestRecoverDamagedStartInNamespace(t *testing.T) {
	s := proc.NewSpawner()
	iso := s.Isolation()
	s.Close()
	testsupport.NeedNamespace(t, iso.Err)
	for _, dmg := range damages {
		t.Run(dmg.name, func(t *testing.T) {
			dir, entry, _ := damagedRun(t, false, dmg.at)
			h := newHarness(t, short, dir)
			name := "k.dmg"
			if dmg.name == "its instance" {
				name = "k.emg" // what it reads as its instance, one bit off
			}
			// Where its invocation id is damaged, no process carries the
			// id it reads; there is no pid entry with the right one.
			want := fmt.Sprintf("journal entry %d of %s is damaged (%s); no process carries its invocation id: it is gone", entry, name, dmg.why)
			require.True(t, h.log.WaitFor(want, 5*time.Second), "want %q in the log: %s", want, h.log)
			m := h.scrape()
			assert.Equal(t, 1.0, m["graft_runner_damaged_entries_total"], "counted")
			assert.Equal(t, 0.0, m[`graft_runner_recoveries_total{result="stopped"}`], "nothing to stop")
			assert.Equal(t, 2.0, m[`graft_runner_recoveries_total{result="gone"}`], "k.dmg and k.other were gone")

			sess := h.open(0)
			st := h.start(name, plugin(t, sess, "cooperative"))
			assert.Equal(t, int64(2), st.Generation, "the generation it reads was taken")
		})
	}
}

// damagedRun runs a runner daemon on a fresh state dir (without PID
// namespaces when noNamespace) that starts instance k.other, then k.dmg, a plugin whose
// grandchild leaves for a session of its own, and kills it with SIGKILL;
// then flips the byte at the first at (empty: the first byte of the
// checksum) in the start entry of k.dmg in its journal. It returns the
// state dir, the entry's number (from 1) and the grandchild's pid, which
// outlives the runner without a namespace. Whatever of the test's
// processes is left at its end is killed.
func damagedRun(t *testing.T, noNamespace bool, at string) (dir string, entry, escaped int) {
	dir = t.TempDir()
	t.Cleanup(func() { killLeft(t) })
	var env []string
	if noNamespace {
		env = append(env, noNamespaceEnv+"=1")
	}
	d, line := launchDaemon(t, dir, filepath.Join(dir, "r.sock"), short.Grace, nil, env...)
	require.Equal(t, "ready\n", line, "log: %s", d.log)
	sess := d.open(0)
	ev := d.events(sess)
	other := d.start("k.other", plugin(t, sess, "cooperative")) // entries before the damaged one
	ev.ready(t)
	st := d.start("k.dmg", plugin(t, sess, "daemon"))
	evs := ev.until(t, 5*time.Second, func(e runnerapi.Event) bool { return strings.HasPrefix(e.Line, "daemon ") })
	escaped = atoi(t, strings.TrimPrefix(evs[len(evs)-1].Line, "daemon "))
	ev.close()
	d.kill()
	if noNamespace {
		// Both plugins die with the runner (their parent-death signal):
		// one still dying when the next runner looks would be stopped by
		// it, and counted.
		testsupport.WaitGone(t, 5*time.Second, st.PID, other.PID)
		require.True(t, alive(escaped), "the escaped grandchild outlived the runner")
	} else {
		// The init kills them all as its runner goes, but not at once: one
		// still dying when the next runner looks would be counted stopped.
		testsupport.WaitGone(t, 5*time.Second, st.PID, other.PID, escaped)
	}
	return dir, damageStart(t, journalPath(dir), "k.dmg", at), escaped
}

// damageStart flips the byte at the first at (empty: the checksum's
// first) in the start entry of instance in the journal at path, and
// returns the entry's number, from 1.
func damageStart(t *testing.T, path, instance, at string) int {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := bytes.SplitAfter(data, []byte{'\n'})
	for i, line := range lines {
		e, ok := decodeEntry(bytes.TrimSuffix(line, []byte{'\n'}))
		if !ok || e.Op != opStart || e.Instance != instance {
			continue
		}
		off := 0
		if at != "" {
			off = bytes.Index(line, []byte(at))
			require.GreaterOrEqual(t, off, 9, "%q in %q", at, line)
			if at[len(at)-1] == '"' {
				off += len(at) + 2 // a byte inside the value
			}
		}
		line[off] ^= 1
		_, ok = decodeEntry(bytes.TrimSuffix(line, []byte{'\n'}))
		require.False(t, ok, "damaged: %q", line)
		require.NoError(t, os.WriteFile(path, bytes.Join(lines, nil), 0o600))
		return i + 1
	}
	t.Fatalf("no start entry of %s in %q", instance, data)
	return 0
}

// killLeft kills whatever of the test's processes still runs
// (killMarked), and waits until it is gone.
func killLeft(t *testing.T) {
	var pids []int
	for _, p := range marked(t) {
		pids = append(pids, p.pid)
	}
	killMarked(t)
	testsupport.WaitGone(t, 5*time.Second, pids...)
}

// TestReplayDamaged: what replay makes of a damaged entry among whole
// ones: it never ends a record or hides a process, and a whole entry
// wins over what is read of a damaged one.
func TestReplayDamaged(t *testing.T) {
	line := func(op string, rec record) []byte {
		b, err := encodeEntry(entry{Op: op, record: rec})
		require.NoError(t, err)
		return b
	}
	damaged := func(b []byte, at string) []byte {
		b = append([]byte(nil), b...)
		b[bytes.Index(b, []byte(at))+len(at)] ^= 1
		return b
	}
	a1 := record{Instance: "a", Generation: 1, Invocation: "inv-a1", BootID: "boot"}
	a1pid := a1
	a1pid.PID, a1pid.StartTime = 42, 7
	a2 := record{Instance: "a", Generation: 2, Invocation: "inv-a2", BootID: "boot"}
	for _, tc := range []struct {
		name    string
		lines   [][]byte
		last    int64  // of a
		live    string // the invocation id of a's record; "" none
		pid     int    // its pid
		damage  int    // the entry its damage names; 0 none
		noStart bool
		extra   []string // the invocation ids of the extra records
		looked  bool     // the damaged entry's process is looked for
	}{
		{name: "start damaged, its pid whole", lines: [][]byte{damaged(line(opStart, a1), `"invocation":"`), line(opPID, a1pid)},
			last: 1, live: "inv-a1", pid: 42, damage: 1, looked: true},
		{name: "start damaged in its generation, its pid whole", lines: [][]byte{damaged(line(opStart, a1), `"generation":`), line(opPID, a1pid)},
			last: 1, live: "inv-a1", pid: 42, damage: 1, looked: true},
		{name: "start missing", lines: [][]byte{line(opPID, a1pid)},
			last: 1, live: "inv-a1", pid: 42, damage: 1, noStart: true},
		{name: "start damaged, then ended", lines: [][]byte{damaged(line(opStart, a1), `"bootID":"`), line(opPID, a1pid), line(opEnd, record{Instance: "a", Generation: 1})},
			last: 1},
		{name: "end damaged", lines: [][]byte{line(opStart, a1), damaged(line(opEnd, record{Instance: "a", Generation: 1}), `"op":"`)},
			last: 1, live: "inv-a1"},
		{name: "gen damaged", lines: [][]byte{damaged(line(opGen, record{Instance: "a", Generation: 9}), `"op":`)},
			last: 9},
		{name: "start damaged, a later start whole", lines: [][]byte{damaged(line(opStart, a1), `"bootID":"`), line(opStart, a2)},
			last: 2, live: "inv-a2", extra: []string{"inv-a1"}, looked: true},
		{name: "start whole, a damaged one of another process", lines: [][]byte{line(opStart, a2), damaged(line(opStart, a1), `"bootID":"`)},
			last: 2, live: "inv-a2", extra: []string{"inv-a1"}, looked: true},
		{name: "nothing readable", lines: [][]byte{line(opStart, a2), append(bytes.Repeat([]byte{'x'}, 40), '\n')},
			last: 2, live: "inv-a2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := newReplay()
			rp.read(bytes.Join(tc.lines, nil))
			assert.Equal(t, tc.last, rp.last["a"], "a's last generation")
			rec, live := rp.live["a"]
			if tc.live == "" {
				assert.False(t, live, "no record of a: %+v", rec)
			} else {
				require.True(t, live, "a record of a")
				assert.Equal(t, tc.live, rec.Invocation)
				assert.Equal(t, tc.pid, rec.PID)
				if tc.damage == 0 {
					assert.Nil(t, rec.damage)
				} else if assert.NotNil(t, rec.damage) {
					assert.Equal(t, tc.damage, rec.damage.entry)
					assert.Equal(t, tc.noStart, rec.damage.noStart)
				}
			}
			var extra []string
			for _, x := range rp.extra {
				extra = append(extra, x.Invocation)
			}
			assert.Equal(t, tc.extra, extra, "extra records")
			for _, d := range rp.damaged {
				assert.Equal(t, tc.looked, d.looked, "entry %d looked for", d.entry)
			}
		})
	}
}

// TestJournalKeepsExtra: a damaged entry naming another process than its
// instance's record (an extra record) stays in the journal the open
// compacts, as it was read, so that a runner killed before it stopped
// that process leaves it to the next; once it is gone, the journal is
// compacted without it.
func TestJournalKeepsExtra(t *testing.T) {
	dir := t.TempDir()
	st := openTestState(t, dir)
	a2 := record{Instance: "a", Generation: 2, Invocation: "inv-a2"}
	require.NoError(t, st.writeRecord(a2))
	require.NoError(t, st.close())
	a1, err := encodeEntry(entry{Op: opStart, record: record{Instance: "a", Generation: 1, Invocation: "inv-a1"}})
	require.NoError(t, err)
	a1[bytes.Index(a1, []byte(`"bootID"`))] ^= 1
	f, err := os.OpenFile(journalPath(dir), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(a1)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	for range 2 { // opened twice: the compaction of the first kept it
		st = openTestState(t, dir)
		recs, _, err := st.records()
		require.NoError(t, err)
		require.Len(t, recs, 2, "a's record and the extra one: %+v", recs)
		assert.Equal(t, "inv-a2", st.live["a"].Invocation)
		require.Len(t, st.extra, 1)
		assert.Equal(t, "inv-a1", st.extra[0].Invocation)
		require.NoError(t, st.close())
	}
	st = openTestState(t, dir)
	require.NoError(t, st.forget(st.extra[0]))
	require.NoError(t, st.close())
	rp := journalOf(t, dir)
	assert.Empty(t, rp.damaged, "compacted without it")
	assert.Empty(t, rp.extra)
	assert.Equal(t, "inv-a2", rp.live["a"].Invocation, "a's record stays")
}
