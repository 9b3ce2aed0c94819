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
// an append that never completed: its sync never returned, so nothing it
// held was ever handed out, and replay skips it.

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
	var e entry
	sum, b, ok := bytes.Cut(line, []byte{' '})
	if !ok || len(sum) != 8 {
		return e, false
	}
	want, err := strconv.ParseUint(string(sum), 16, 32)
	if err != nil || uint32(want) != crc32.Checksum(b, castagnoli) {
		return e, false
	}
	if json.Unmarshal(b, &e) != nil || validateName(e.Instance) != nil || e.Generation < 0 {
		return e, false
	}
	return e, true
}

// replay is what a journal holds: the last generation of every instance
// and the records without an end.
type replay struct {
	last    map[string]int64
	oldLast map[string]int64 // by escaped name: opOldGen
	live    map[string]record
	torn    int // lines skipped: appends that never completed
	// lines is the length of the data up to its last '\n': an append
	// after it starts a line of its own.
	lines int64
}

func newReplay() *replay {
	return &replay{last: map[string]int64{}, oldLast: map[string]int64{}, live: map[string]record{}}
}

// read replays the journal's data.
func (r *replay) read(data []byte) {
	for len(data) > 0 {
		line, rest, whole := bytes.Cut(data, []byte{'\n'})
		data = rest
		if whole {
			r.lines += int64(len(line)) + 1
		}
		e, ok := decodeEntry(line)
		if !whole || !ok {
			r.torn++
			continue
		}
		r.apply(e)
	}
}

// apply applies one entry. A record belongs to its instance's latest
// generation: an entry of an older one changes nothing of a newer.
func (r *replay) apply(e entry) {
	name, gen := e.Instance, e.Generation
	if e.Op == opOldGen {
		r.oldLast[name] = max(r.oldLast[name], gen)
		return
	}
	r.last[name] = max(r.last[name], gen)
	cur, live := r.live[name]
	switch e.Op {
	case opStart:
		if !live || cur.Generation <= gen {
			r.live[name] = e.record
		}
	case opPID:
		if live && cur.Generation == gen {
			cur.PID, cur.StartTime, cur.StartedAt = e.PID, e.StartTime, e.StartedAt
			r.live[name] = cur
		}
	case opEnd:
		if live && cur.Generation == gen {
			delete(r.live, name)
		}
	}
}

// compacted is a journal holding r alone: a gen entry for each instance,
// an oldgen entry for each generation of the old layout no instance
// known has taken over, and a start entry for each live record.
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
	for _, rec := range r.live {
		line, err := encodeEntry(entry{Op: opStart, record: rec})
		if err != nil {
			return nil, err
		}
		buf.Write(line)
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
