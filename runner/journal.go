package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strconv"

	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/safefs"
)

// The runner's journal (docs/runner-api.md, "The state dir"): one line an
// entry, appended, each "<crc> <json>\n", crc the CRC-32C of the JSON in 8
// hex digits. A line cut short by a crash, or whose sum does not match, is
// damaged: an append that never completed (its sync never returned), or
// one the disk lost a part of since. Replay never trusts what it reads of
// one, and never skips it either: an invocation id read in it is looked
// for at recovery, a generation read in it counts as handed out, and
// each is reported (damage.go).

// Entry operations.
const (
	opGen   = "gen"   // an instance's last generation, written by compaction
	opStart = "start" // a generation taken and its record, before the spawn
	opPID   = "pid"   // the record's pid and start time, once it runs
	opEnd   = "end"   // the record's process is gone
	// A generation of the old layout whose file's name (an escaped
	// instance name, in Instance) cannot be turned back into its
	// instance's: see foldOld.
	opOldGen = "oldgen"
)

// entry is one line of the journal: an operation on the record of an
// instance, of one generation.
type entry struct {
	Op string `json:"op"`
	// Keep, on a start, says that the instance's record of an earlier
	// generation stays: a start-first start left its process running
	// beside the new one, until the end entry of its own.
	Keep bool `json:"keep,omitempty"`
	record
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeEntry is e's line.
func encodeEntry(e entry) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	line := make([]byte, 0, len(b)+10)
	line = fmt.Appendf(line, "%08x ", crc32.Checksum(b, castagnoli))
	line = append(line, b...)
	return append(line, '\n'), nil
}

// decodeEntry reads one line (without its '\n'); false when it is not whole.
func decodeEntry(line []byte) (entry, bool) {
	e, why := readEntry(line)
	return e, why == ""
}

// Why an entry is damaged.
const (
	damagedCut      = "cut short"    // the journal's last line, without its '\n'
	damagedChecksum = "bad checksum" // its sum is missing or does not match
	damagedFields   = "bad fields"   // its sum matches, but it is not an entry
)

// readEntry reads one line (without its '\n'), and says why it is not an
// entry when it is not: damagedChecksum or damagedFields.
func readEntry(line []byte) (entry, string) {
	var e entry
	sum, b, ok := bytes.Cut(line, []byte{' '})
	if !ok || len(sum) != 8 {
		return e, damagedChecksum
	}
	want, err := strconv.ParseUint(string(sum), 16, 32)
	if err != nil || uint32(want) != crc32.Checksum(b, castagnoli) {
		return e, damagedChecksum
	}
	if json.Unmarshal(b, &e) != nil || validateName(e.Instance) != nil || e.Generation < 0 {
		return e, damagedFields
	}
	return e, ""
}

// replay is what a journal holds: the last generation of every instance
// and the records without an end.
type replay struct {
	last    map[string]int64
	oldLast map[string]int64 // by escaped name: opOldGen
	live    map[string]record
	// kept are the records of the generations that start-first starts
	// left running beside their instance's live one (entry.Keep).
	kept map[string]record
	torn int // damaged lines: len(damaged)
	// damaged are the lines that are not whole entries, in order.
	damaged []*damage
	// extra are the records read from damaged entries that no instance's
	// record took (it holds another process): looked for all the same.
	extra []record
	// lines is the length of the data up to its last '\n': an append
	// after it starts a line of its own.
	lines int64
	n     int // the entries read, the damaged included
}

func newReplay() *replay {
	return &replay{last: map[string]int64{}, oldLast: map[string]int64{}, live: map[string]record{}, kept: map[string]record{}}
}

// read replays the journal's data.
func (r *replay) read(data []byte) {
	for len(data) > 0 {
		line, rest, whole := bytes.Cut(data, []byte{'\n'})
		data = rest
		r.n++
		if whole {
			r.lines += int64(len(line)) + 1
		}
		e, why := readEntry(line)
		if !whole {
			why = damagedCut
		}
		if why != "" {
			r.torn++
			r.applyDamaged(salvage(line, r.n, why))
			continue
		}
		r.apply(e)
	}
	r.settle()
}

// apply applies one entry. A record belongs to its instance's latest
// generation: an entry of an older one changes nothing of a newer. A
// record read from a damaged entry gives way to any whole one.
func (r *replay) apply(e entry) {
	name, gen := e.Instance, e.Generation
	if e.Op == opOldGen {
		r.oldLast[name] = max(r.oldLast[name], gen)
		return
	}
	r.last[name] = max(r.last[name], gen)
	cur, live := r.live[name]
	if k, ok := r.kept[name]; ok && k.Generation == gen && e.Op != opStart {
		// The generation a start-first start left running beside the
		// live one.
		if e.Op == opEnd {
			delete(r.kept, name)
		} else if e.Op == opPID {
			k.PID, k.StartTime, k.StartedAt = e.PID, e.StartTime, e.StartedAt
			r.kept[name] = k
		}
		return
	}
	switch e.Op {
	case opStart:
		if e.Keep && live && !cur.salvaged && cur.Generation < gen {
			r.kept[name] = cur
		}
		if !live || cur.Generation <= gen || cur.salvaged {
			r.take(e.record)
		}
	case opPID:
		switch {
		case live && (cur.Generation == gen || cur.salvaged && cur.Invocation == e.Invocation):
			cur.PID, cur.StartTime, cur.StartedAt = e.PID, e.StartTime, e.StartedAt
			if cur.salvaged {
				// What was read of its damaged start gives way to the
				// pid entry's, which is whole.
				cur.Generation, cur.Invocation, cur.BootID, cur.salvaged = gen, e.Invocation, e.BootID, false
			}
			r.live[name] = cur
		case !live || cur.Generation < gen || cur.salvaged:
			// Its start entry is missing: damaged beyond reading (or
			// lost). The pid entry holds the whole record.
			rec := e.record
			rec.damage = &damage{entry: r.n, noStart: true}
			r.take(rec)
		}
	case opEnd:
		if live && cur.Generation == gen {
			delete(r.live, name)
			if k, ok := r.kept[name]; ok {
				// The live one ended before the one kept beside it.
				r.live[name] = k
				delete(r.kept, name)
			}
		}
	}
}

// take makes rec its instance's record. One it replaces that was read
// from a damaged entry, of another process, is still looked for: extra.
func (r *replay) take(rec record) {
	if cur, live := r.live[rec.Instance]; live && cur.salvaged && cur.Invocation != rec.Invocation {
		r.extra = append(r.extra, cur)
	}
	r.live[rec.Instance] = rec
}

// compacted is a journal holding r alone: a gen entry for each instance,
// an oldgen entry for each generation of the old layout no instance
// known has taken over, a start entry for each live record, and the
// damaged entry of each extra one.
func (r *replay) compacted() ([]byte, error) {
	var buf bytes.Buffer
	covered := make(map[string]bool, len(r.last))
	for name, gen := range r.last {
		if key := escape(name); len(r.oldLast) > 0 && gen >= r.oldLast[key] {
			covered[key] = true
		}
	}
	for key, gen := range r.oldLast {
		if covered[key] {
			continue
		}
		line, err := encodeEntry(entry{Op: opOldGen, record: record{Instance: key, Generation: gen}})
		if err != nil {
			return nil, err
		}
		buf.Write(line)
	}
	for name, gen := range r.last {
		line, err := encodeEntry(entry{Op: opGen, record: record{Instance: name, Generation: gen}})
		if err != nil {
			return nil, err
		}
		buf.Write(line)
	}
	// A kept record's start goes before the live one's of its instance,
	// which keeps it.
	for _, rec := range r.kept {
		line, err := encodeEntry(entry{Op: opStart, record: rec})
		if err != nil {
			return nil, err
		}
		buf.Write(line)
	}
	for name, rec := range r.live {
		_, keep := r.kept[name]
		line, err := encodeEntry(entry{Op: opStart, Keep: keep, record: rec})
		if err != nil {
			return nil, err
		}
		buf.Write(line)
	}
	// An extra record has no entry of its own but its damaged one: that
	// stays, as it was read, for the next runner to read again should
	// this one die before it has stopped its process.
	for _, rec := range r.extra {
		if rec.damage != nil {
			buf.Write(rec.damage.line)
			buf.WriteByte('\n')
		}
	}
	return buf.Bytes(), nil
}

// writeJournal replaces the journal at path with data (atomicfile.Write),
// and returns the new journal opened for appends once renamed; synced is
// false, with the error, when the directory's sync failed after the
// rename, which a crash could then undo.
func writeJournal(path string, data []byte) (f *os.File, synced bool, err error) {
	err = atomicfile.Write(path, data, 0o600)
	var dirSync *atomicfile.DirSyncError
	if err != nil && !errors.As(err, &dirSync) {
		return nil, false, err
	}
	f, oerr := openJournal(path)
	if oerr != nil {
		return nil, false, oerr
	}
	return f, err == nil, err
}

// openJournal opens the journal for appends, as safefs opens a file for
// writing (no link, a regular file of this user's, one name).
func openJournal(path string) (*os.File, error) {
	return safefs.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
}
