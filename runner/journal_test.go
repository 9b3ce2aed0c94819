//go:build linux

package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/fsfault"
)

// journalOf replays the journal of the state dir dir as a runner opening
// it would, without changing it.
func journalOf(t *testing.T, dir string) *replay {
	t.Helper()
	rp := newReplay()
	require.NoError(t, readJournal(journalPath(dir), rp))
	return rp
}

// writeRecord appends rec as a start does, synced, for tests that make
// the state a runner leaves.
func (s *state) writeRecord(rec record) error {
	s.mu.Lock()
	s.last[rec.Instance] = max(s.lastLocked(rec.Instance), rec.Generation)
	err := s.appendEntry(entry{Op: opStart, record: rec})
	if err == nil {
		s.live[rec.Instance] = rec
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.commits.sync(s.syncJournal)
}

// openTestState opens a state dir for the test, closed at its end.
func openTestState(t *testing.T, dir string) *state {
	t.Helper()
	st, err := openState(dir)
	require.NoError(t, err)
	t.Cleanup(func() { st.close() })
	return st
}

// TestJournalTornTail: an entry cut short by a crash mid-append, or whose
// sum does not match (a block the disk never wrote, or lost), is not
// trusted and not skipped either: the entries before it are replayed; a
// generation read in it counts as handed out, and the process whose
// invocation id is read in it is looked for (its record is live); the
// runner starts the instance above them. The next open compacts it away.
func TestJournalTornTail(t *testing.T) {
	dir := t.TempDir()
	st := openTestState(t, dir)
	for gen := int64(1); gen <= 3; gen++ {
		_, err := st.next("torn", record{Invocation: "inv"}, false)
		require.NoError(t, err)
		require.NoError(t, st.removeRecord("torn", gen))
	}
	require.NoError(t, st.close())
	whole, err := os.ReadFile(journalPath(dir))
	require.NoError(t, err)

	four, err := encodeEntry(entry{Op: opStart, record: record{Instance: "torn", Generation: 4, Invocation: "inv4"}})
	require.NoError(t, err)
	five, err := encodeEntry(entry{Op: opStart, record: record{Instance: "torn", Generation: 5, Invocation: "inv5"}})
	require.NoError(t, err)
	bad := append([]byte(nil), five...)
	bad[bytes.Index(bad, []byte(`"bootID"`))] ^= 1
	for _, tc := range []struct {
		name string
		tail []byte
		last int64  // the last generation replayed
		live string // the invocation id of the record left, if any
		why  string // why the tail is damaged
	}{
		{"cut short", four[:len(four)-3], 4, "inv4", damagedCut},
		{"cut in its invocation id", four[:bytes.Index(four, []byte("inv4"))+2], 4, "", damagedCut},
		{"no newline", four[:len(four)-1], 4, "inv4", damagedCut},
		{"zeros", make([]byte, 300), 3, "", damagedCut},
		{"wrong sum", bad, 5, "inv5", damagedChecksum},
		{"empty journal", nil, 3, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(journalPath(dir), append(append([]byte(nil), whole...), tc.tail...), 0o600))
			rp := journalOf(t, dir)
			assert.Equal(t, tc.last, rp.last["torn"], "the entries before the tail, and the generation read in it")
			if tc.live == "" {
				assert.Empty(t, rp.live, "each ended")
			} else {
				require.Contains(t, rp.live, "torn")
				rec := rp.live["torn"]
				assert.Equal(t, tc.live, rec.Invocation, "looked for")
				require.NotNil(t, rec.damage)
				assert.Equal(t, tc.why, rec.damage.why)
			}
			assert.Equal(t, min(len(tc.tail), 1), rp.torn, "the tail damaged")
			if tc.why != "" {
				require.Len(t, rp.damaged, 1)
				assert.Equal(t, 7, rp.damaged[0].entry, "after 3 starts and their ends")
				assert.Equal(t, tc.why, rp.damaged[0].why)
			}

			st := openTestState(t, dir)
			gen, err := st.next("torn", record{Invocation: "inv"}, false)
			require.NoError(t, err)
			assert.Equal(t, tc.last+1, gen, "above every generation it reads")
			require.NoError(t, st.removeRecord("torn", gen))
			require.NoError(t, st.close())
			rp = journalOf(t, dir)
			assert.Zero(t, rp.torn, "compacted at open, appended after")
			assert.Equal(t, tc.last+1, rp.last["torn"])
			require.NoError(t, os.WriteFile(journalPath(dir), whole, 0o600))
		})
	}
}

// TestJournalNotCompacted: a state dir where no file can be made (a full
// disk would do the same) still opens, so that what the last runner left
// is recovered: appends go on in the journal as it was, after its torn
// last line, cut off; the next open compacts it.
func TestJournalNotCompacted(t *testing.T) {
	dir := t.TempDir()
	st := openTestState(t, dir)
	_, err := st.next("nc", record{Invocation: "inv"}, false)
	require.NoError(t, err)
	require.NoError(t, st.close())
	torn, err := encodeEntry(entry{Op: opStart, record: record{Instance: "nc", Generation: 2, Invocation: "inv"}})
	require.NoError(t, err)
	f, err := os.OpenFile(journalPath(dir), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(torn[:len(torn)/2])
	require.NoError(t, err)
	require.NoError(t, f.Close())

	restore := fsfault.ReadOnly(t, dir)
	st = openTestState(t, dir)
	require.Error(t, st.notCompacted)
	assert.Contains(t, st.notCompacted.Error(), "compact the journal")
	gen, err := st.next("nc", record{Invocation: "inv"}, false)
	require.NoError(t, err)
	assert.Equal(t, int64(3), gen, "above the generation read in the torn line")
	rp := journalOf(t, dir)
	assert.Zero(t, rp.torn, "the torn line was cut off before the append")
	assert.Equal(t, int64(3), rp.live["nc"].Generation)
	require.NoError(t, st.close())

	restore()
	st = openTestState(t, dir)
	require.NoError(t, st.notCompacted)
	gen, err = st.next("nc", record{Invocation: "inv"}, false)
	require.NoError(t, err)
	assert.Equal(t, int64(4), gen)
}

// TestOldLayout: a state dir an older runner left, a file a generation
// and a file a record, is recovered: its generations go on above, a
// long name's (cut, ending in its digest) too, its record's process is
// looked for (here gone), and it is folded into the journal, the old
// directories removed.
func TestOldLayout(t *testing.T) {
	dir := t.TempDir()
	long := "long." + strings.Repeat("%", 70)
	require.Contains(t, escape(long), "~", "an escape that is cut, ending in the name's digest")
	gens := map[string]int64{"old.a": 4, long: 9, "old.rec": 2}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, generationsDir), 0o700))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, recordsDir), 0o700))
	for name, gen := range gens {
		require.NoError(t, os.WriteFile(filepath.Join(dir, generationsDir, escape(name)), []byte(strconv.FormatInt(gen, 10)+"\n"), 0o600))
	}
	// A record above its generation file (the file lost), and what a
	// crash left of a write.
	require.NoError(t, os.WriteFile(filepath.Join(dir, recordsDir, "old.rec.json"),
		[]byte(`{"instance":"old.rec","generation":3,"invocation":"`+mark(t)+`","bootID":"x","startedAt":"2026-01-01T00:00:00Z"}`+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, generationsDir, ".old.a.123.tmp"), []byte("99\n"), 0o600))
	leftover := filepath.Join(dir, "."+journalFile+".123.tmp") // a compaction cut short
	require.NoError(t, os.WriteFile(leftover, []byte("junk"), 0o600))

	h := newHarness(t, short, dir)
	for _, d := range []string{generationsDir, recordsDir} {
		_, err := os.Stat(filepath.Join(dir, d))
		assert.ErrorIs(t, err, os.ErrNotExist, "%s folded into the journal", d)
	}
	_, err := os.Stat(leftover)
	assert.ErrorIs(t, err, os.ErrNotExist, "removed at open")
	assert.Contains(t, h.log.String(), "a recorded process is gone")
	sess := h.open(0)
	assert.Equal(t, int64(5), h.start("old.a", plugin(t, sess, "cooperative")).Generation)
	assert.Equal(t, int64(4), h.start("old.rec", plugin(t, sess, "cooperative")).Generation, "above its record")
	dir2 := h.dir
	h.close(t)

	// Folded: the next runner reads the journal alone.
	h = newHarness(t, short, dir2)
	sess = h.open(0)
	assert.Equal(t, int64(10), h.start(escapePath(long), plugin(t, sess, "cooperative")).Generation, "a long name's generation, kept by its escape")
	assert.Equal(t, int64(6), h.start("old.a", plugin(t, sess, "cooperative")).Generation)
	assert.Equal(t, int64(1), h.start("old.b", plugin(t, sess, "cooperative")).Generation)
}

// TestCompaction: a journal compacted, at open or once it has grown
// (here a small threshold, by hand), keeps every instance's last
// generation and every live record with its pid, and nothing ended.
func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	st := openTestState(t, dir)
	const instances = 50
	for i := range instances {
		name := fmt.Sprintf("c.%d", i)
		for range 3 {
			gen, err := st.next(name, record{Invocation: "inv", BootID: "boot"}, false)
			require.NoError(t, err)
			require.NoError(t, st.recordPID(record{Instance: name, Generation: gen, PID: 100 + i, StartTime: uint64(gen)}))
			if i%2 == 0 || gen < 3 {
				require.NoError(t, st.removeRecord(name, gen))
			}
		}
	}
	before := journalOf(t, dir)
	fi, err := os.Stat(journalPath(dir))
	require.NoError(t, err)

	// Past the threshold, the next group's sync compacts it.
	st.mu.Lock()
	st.compactAt = st.size
	st.mu.Unlock()
	_, err = st.next("c.last", record{Invocation: "inv"}, false)
	require.NoError(t, err)
	after := journalOf(t, dir)
	small, err := os.Stat(journalPath(dir))
	require.NoError(t, err)
	assert.Less(t, small.Size(), fi.Size(), "compacted")
	assert.False(t, os.SameFile(fi, small), "a fresh file, renamed over the old")
	before.apply(entry{Op: opStart, record: record{Instance: "c.last", Generation: 1, Invocation: "inv"}})
	assert.Equal(t, before.last, after.last, "every generation")
	assert.Equal(t, before.live, after.live, "every live record, with its pid")
	assert.Len(t, after.live, instances/2+1)
	for name, rec := range after.live {
		if name != "c.last" {
			assert.Equal(t, int64(3), rec.Generation, name)
			assert.NotZero(t, rec.PID, name)
		}
	}

	// Appends go on in the new file; an open compacts it too.
	require.NoError(t, st.removeRecord("c.last", 1))
	require.NoError(t, st.close())
	st = openTestState(t, dir)
	again := journalOf(t, dir)
	delete(after.live, "c.last")
	assert.Equal(t, after.last, again.last)
	assert.Equal(t, after.live, again.live)
	gen, err := st.next("c.1", record{Invocation: "inv"}, false)
	require.NoError(t, err)
	assert.Equal(t, int64(4), gen)
}

// FuzzJournal: any bytes replay without a panic, as whole entries or
// skipped ones; a compaction of what they hold replays to the same; and
// what follows whole entries never takes them away.
func FuzzJournal(f *testing.F) {
	start, _ := encodeEntry(entry{Op: opStart, record: record{Instance: "f", Generation: 2, Invocation: "inv", PID: 7}})
	end, _ := encodeEntry(entry{Op: opEnd, record: record{Instance: "f", Generation: 2}})
	f.Add(start, []byte("zz"))
	f.Add(append(start, end...), []byte{0, 0, '\n'})
	f.Add([]byte("00000000 {}\n"), start[:10])
	f.Fuzz(func(t *testing.T, data, tail []byte) {
		rp := newReplay()
		rp.read(data)
		b, err := rp.compacted()
		require.NoError(t, err)
		again := newReplay()
		again.read(b)
		assert.Zero(t, again.torn, "a compaction is whole")
		assert.Equal(t, marshal(t, rp.last), marshal(t, again.last))
		assert.Equal(t, marshal(t, rp.live), marshal(t, again.live))

		// Whole entries, then anything.
		more := newReplay()
		more.read(append(b, tail...))
		for name, gen := range rp.last {
			assert.GreaterOrEqual(t, more.last[name], gen, name)
		}
	})
}

func marshal(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestJournalKeeps: a start-first start keeps the instance's record of
// the generation it starts beside (entry.Keep): both are in the journal,
// read back or compacted, until each one's end; the older is the live
// one again when the newer ends first.
func TestJournalKeeps(t *testing.T) {
	dir := t.TempDir()
	st := openTestState(t, dir)
	gens := func(st *state) []int64 {
		recs, _, err := st.records()
		require.NoError(t, err)
		var out []int64
		for _, r := range recs {
			out = append(out, r.Generation)
		}
		slices.Sort(out)
		return out
	}
	_, err := st.next("api", record{Invocation: "one"}, false)
	require.NoError(t, err)
	gen, err := st.next("api", record{Invocation: "two"}, true)
	require.NoError(t, err)
	require.Equal(t, int64(2), gen)
	assert.Equal(t, []int64{1, 2}, gens(st))
	rp := journalOf(t, dir)
	assert.Equal(t, int64(2), rp.live["api"].Generation, "read back without a compaction")
	assert.Equal(t, int64(1), rp.kept["api"].Generation)
	require.NoError(t, st.close())

	st = openTestState(t, dir) // a compaction
	assert.Equal(t, []int64{1, 2}, gens(st))
	require.NoError(t, st.removeRecord("api", 2)) // the new one failed
	assert.Equal(t, []int64{1}, gens(st))
	assert.Equal(t, "one", st.live["api"].Invocation, "the old one is the live one again")
	require.NoError(t, st.close())
	st = openTestState(t, dir)
	assert.Equal(t, []int64{1}, gens(st))
	gen, err = st.next("api", record{Invocation: "three"}, true)
	require.NoError(t, err)
	require.NoError(t, st.removeRecord("api", 1)) // the swap: the old one stops
	require.NoError(t, st.close())
	st = openTestState(t, dir)
	assert.Equal(t, []int64{gen}, gens(st))
	require.NoError(t, st.close())
	rp = journalOf(t, dir)
	assert.Empty(t, rp.kept)
}
