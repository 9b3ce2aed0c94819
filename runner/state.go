package runner

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/internal/statedir"
)

// The files of a state dir (docs/runner-api.md, "The state dir").
const (
	lockFile       = statedir.RunnerLock
	journalFile    = statedir.Journal
	generationsDir = statedir.Generations // the layout of older runners, folded into the journal at open
	recordsDir     = statedir.Records
)

// maxStateFile bounds a generation or a record file of the old layout:
// the runner wrote far less; a larger file is not one of its own.
const maxStateFile = 64 << 10

// minCompact is the size below which the journal is never compacted
// while the runner runs: rewriting it costs a sync and a rename.
const minCompact = 1 << 20

// StateError is a write to the state dir that failed: nothing was started
// and the generation it was for is never handed out.
type StateError struct {
	Op  string
	Err error
}

func (e *StateError) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *StateError) Unwrap() error { return e.Err }

// ExhaustedError is a start refused because its instance has had the
// largest generation there is, math.MaxInt64: a next one would wrap to
// negative, and fencing on generations would accept an older writer.
// Nothing was started or stopped.
type ExhaustedError struct {
	Instance string
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("instance %s has had generation %d, the largest there is: no later one can be handed out", e.Instance, int64(math.MaxInt64))
}

// Hint tells the operator what to do about it.
func (e *ExhaustedError) Hint() string {
	return "give the plugin another instance name (instance: in plugins.yaml); its generations begin again at 1"
}

// record is what the state dir keeps of a process that may be running,
// from before its start until its exit is confirmed: enough for the next
// runner to find it, and to know it from a process that reused its pid.
type record struct {
	Instance   string `json:"instance"`
	Generation int64  `json:"generation"`
	// Invocation is GRAFT_INVOCATION_ID in its environment (and so in its
	// descendants').
	Invocation string `json:"invocation"`
	// PID and StartTime (clock ticks since boot) are set once it runs.
	PID       int    `json:"pid,omitempty"`
	StartTime uint64 `json:"startTime,omitempty"`
	BootID    string `json:"bootID"`
	// StartedAt is when it started, for the status.
	StartedAt time.Time `json:"startedAt"`
	// damage is the damaged entry of the journal it was read from, or
	// that names its process, or the pid entry it was made from when its
	// start entry is missing, for the report of its recovery; nil for a
	// record read from whole entries alone.
	damage *damage
	// salvaged: it was read from a damaged entry, and gives way to any
	// record read from whole ones.
	salvaged bool
}

// state is the runner's state dir: the generation of every instance ever
// started and the records of the processes that may run, in its journal
// (journal.go), and the same in memory.
type state struct {
	dir string

	mu sync.Mutex
	// last holds, by instance, the highest generation known: on disk or
	// ever attempted. A number is taken before its write, so a write that
	// failed part way never gets its number handed out later.
	last map[string]int64
	// oldLast holds the generations of the old layout by escaped name,
	// which cannot always be turned back into the instance's.
	oldLast map[string]int64
	live    map[string]record // the records without an end
	// kept are the records without an end of the generations that
	// start-first starts left running beside live ones (entry.Keep).
	kept map[string]record
	// extra are records read from damaged entries of the journal that no
	// instance's record took, looked for at recovery (replay.extra); the
	// journal keeps their damaged entries until they are gone.
	extra []record
	// damaged are the damaged entries the journal held at open.
	damaged []*damage
	bad     []string // records of the old layout that could not be read
	// notCompacted is why the journal could not be compacted at open,
	// when appends go on in it as it was.
	notCompacted error

	f    *os.File // the journal, for appends
	size int64    // its bytes, all whole entries
	// torn is a failed append that left part of an entry, which could not
	// be cut off: no append goes after it until it is.
	torn error
	// dirty is set while the journal's rename (a compaction) may not
	// survive a crash: the next sync syncs the directory first.
	dirty     bool
	compactAt int64 // the size that makes the next sync compact it

	commits committer // the syncs of the journal
}

// openState opens the state dir dir: it replays its journal, folds in
// what a runner of the old layout left, and compacts the journal.
func openState(dir string) (*state, error) {
	rp := newReplay()
	if err := readJournal(journalPath(dir), rp); err != nil {
		return nil, fmt.Errorf("read the journal: %w", err)
	}
	old, bad, err := foldOld(dir, rp)
	if err != nil {
		return nil, err
	}
	s := &state{dir: dir, last: rp.last, oldLast: rp.oldLast, live: rp.live, kept: rp.kept, extra: rp.extra, damaged: rp.damaged, bad: bad}
	removeTemporary(dir)
	if err := s.compact(); err != nil {
		if err := s.reuse(rp, old, err); err != nil {
			return nil, err
		}
		return s, nil
	}
	if s.dirty {
		s.close()
		return nil, &StateError{Op: "compact the journal", Err: errors.New("its directory could not be synced")}
	}
	// What the journal holds now, the old layout need not.
	for _, d := range []string{generationsDir, recordsDir} {
		if err := os.RemoveAll(filepath.Join(dir, d)); err != nil {
			s.close()
			return nil, &StateError{Op: "remove the old layout, folded into the journal", Err: err}
		}
	}
	if err := atomicfile.SyncDir(filepath.Dir(dir)); err != nil {
		s.close()
		return nil, fmt.Errorf("sync the state dir: %w", err)
	}
	return s, nil
}

// reuse appends to the journal as it is, when it could not be compacted
// at open (a full disk, say: a runner that could not open would not stop
// what its predecessor left), once its last line, if cut short, is cut
// off. Not when there is none, or an old layout to fold into it: then
// the compaction's error, cause, fails the open.
func (s *state) reuse(rp *replay, old bool, cause error) error {
	failed := &StateError{Op: "compact the journal", Err: cause}
	if old {
		return failed
	}
	f, err := openJournal(journalPath(s.dir))
	if err != nil {
		return failed
	}
	if err := f.Truncate(rp.lines); err != nil {
		f.Close()
		return failed
	}
	s.f, s.size, s.notCompacted = f, rp.lines, failed
	s.compactAt = max(minCompact, 2*s.size)
	return nil
}

func journalPath(dir string) string { return filepath.Join(dir, journalFile) }

// readJournal replays the journal at path into rp; none is empty.
func readJournal(path string, rp *replay) error {
	f, err := safefs.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	rp.read(data)
	return nil
}

// removeTemporary removes what writeJournal left of a rewrite that a
// crash cut short: its temporary files, named as atomicfile names them.
func removeTemporary(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if name := e.Name(); strings.HasPrefix(name, "."+journalFile+".") && strings.HasSuffix(name, ".tmp") && e.Type().IsRegular() {
			os.Remove(filepath.Join(dir, name))
		}
	}
}

// compact writes a fresh journal holding what s holds, and appends to it
// from then on. The caller holds s.mu, or has s to itself.
func (s *state) compact() error {
	rp := &replay{last: s.last, oldLast: s.oldLast, live: s.live, kept: s.kept, extra: s.extra}
	data, err := rp.compacted()
	if err != nil {
		return err
	}
	f, synced, err := writeJournal(journalPath(s.dir), data)
	if f == nil {
		s.compactAt = max(minCompact, 2*s.size) // try again later
		return err
	}
	if s.f != nil {
		s.f.Close()
	}
	s.f, s.size, s.torn, s.dirty = f, int64(len(data)), nil, !synced
	s.compactAt = max(minCompact, 4*s.size)
	return err
}

// close closes the journal.
func (s *state) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// appendEntry appends e to the journal with one write, unsynced. A write
// that fails part way is cut off, so the next entry starts a line of its
// own. The caller holds s.mu.
func (s *state) appendEntry(e entry) error {
	line, err := encodeEntry(e)
	if err != nil {
		return err
	}
	if s.f == nil {
		return errors.New("the state dir is closed")
	}
	if s.torn != nil {
		if err := s.f.Truncate(s.size); err != nil {
			return fmt.Errorf("an entry cut short could not be removed (%v): %w", err, s.torn)
		}
		s.torn = nil
	}
	n, err := s.f.Write(line)
	if err != nil {
		if n > 0 {
			if terr := s.f.Truncate(s.size); terr != nil {
				s.torn = err
			}
		}
		return err
	}
	s.size += int64(n)
	return nil
}

// syncJournal makes every entry appended so far durable; a group's
// leader calls it (committer.sync). A journal grown large is compacted
// after its sync; a compaction that fails leaves the journal as it was,
// to be tried again later.
func (s *state) syncJournal() error {
	s.mu.Lock()
	f, dirty := s.f, s.dirty
	s.mu.Unlock()
	if f == nil {
		return errors.New("the state dir is closed")
	}
	if dirty {
		if err := syncDir(s.dir); err != nil {
			return err
		}
		s.mu.Lock()
		s.dirty = false
		s.mu.Unlock()
	}
	if err := syncFile(f); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.size >= s.compactAt {
		s.compact() // a failure changes nothing: it is tried again later
	}
	return nil
}

// lastLocked is the highest generation of name known: handed out, tried
// or recorded. The caller holds s.mu.
func (s *state) lastLocked(name string) int64 {
	last := s.last[name]
	if len(s.oldLast) > 0 {
		last = max(last, s.oldLast[escape(name)])
	}
	return last
}

// next takes the next generation of instance name for the process rec
// describes, and appends it, with rec, to the journal, in a group with
// the other starts under way (committer.sync): it is on disk, synced,
// before next returns the generation; an *ExhaustedError after
// math.MaxInt64, a *StateError when the append or its sync failed. Callers
// never ask for one instance from two goroutines at once. With keep, the
// instance's live record stays, kept, until its own end: a start-first
// start leaves its process running.
func (s *state) next(name string, rec record, keep bool) (int64, error) {
	s.mu.Lock()
	last := s.lastLocked(name)
	if last == math.MaxInt64 {
		s.mu.Unlock()
		return 0, &ExhaustedError{Instance: name}
	}
	gen := last + 1
	s.last[name] = gen // taken now, whatever the write does
	rec.Instance, rec.Generation = name, gen
	cur, live := s.live[name]
	keep = keep && live
	err := s.appendEntry(entry{Op: opStart, Keep: keep, record: rec})
	if err == nil {
		if keep {
			s.kept[name] = cur
		}
		s.live[name] = rec
	}
	s.mu.Unlock()
	if err == nil {
		err = s.commits.sync(s.syncJournal)
	}
	if err != nil {
		// Nothing runs of a start refused: its record ends.
		s.removeRecord(name, gen)
		return 0, &StateError{Op: fmt.Sprintf("write generation %d of %s", gen, name), Err: err}
	}
	return gen, nil
}

// canAdvance reports an *ExhaustedError when name has no next generation,
// so that a start that could not take one stops nothing first.
func (s *state) canAdvance(name string) error {
	if last, _ := s.handedOut(name); last == math.MaxInt64 {
		return &ExhaustedError{Instance: name}
	}
	return nil
}

// handedOut is the last generation of name taken: none above it ever ran.
func (s *state) handedOut(name string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastLocked(name), nil
}

// recordPID appends the pid and start time of rec, a process that runs
// now, to its record, without syncing it: the pid is looked up only by a
// runner of the same boot (recover.go), which reads the journal whether
// it was synced or not, since the file system keeps what was written
// across the runner's death; a crash of the machine leaves none of the
// process, and its generation was synced before the spawn.
func (s *state) recordPID(rec record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, live := s.live[rec.Instance]
	if !live || cur.Generation != rec.Generation {
		return nil
	}
	cur.PID, cur.StartTime, cur.StartedAt = rec.PID, rec.StartTime, rec.StartedAt
	s.live[rec.Instance] = cur
	// (A kept record got its pid when it was live.)
	if err := s.appendEntry(entry{Op: opPID, record: rec}); err != nil {
		return &StateError{Op: fmt.Sprintf("record the pid of generation %d of %s", rec.Generation, rec.Instance), Err: err}
	}
	return nil
}

// removeRecord ends the record of generation gen of name once its exit is
// confirmed, and leaves a record of another generation alone. The end is
// not synced: a record that comes back after a crash names a process the
// next runner finds gone. It is forgotten here even when the append
// fails, so that a compaction leaves it out.
func (s *state) removeRecord(name string, gen int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.kept[name]; ok && k.Generation == gen {
		delete(s.kept, name)
		return s.appendEntry(entry{Op: opEnd, record: record{Instance: name, Generation: gen}})
	}
	if cur, live := s.live[name]; !live || cur.Generation != gen {
		return nil
	}
	if _, ok := s.kept[name]; ok {
		// The live one ended before the one it was started beside (a
		// start-first start whose new process failed): that one is the
		// instance's live record again.
		s.live[name] = s.kept[name]
		delete(s.kept, name)
		return s.appendEntry(entry{Op: opEnd, record: record{Instance: name, Generation: gen}})
	}
	delete(s.live, name)
	return s.appendEntry(entry{Op: opEnd, record: record{Instance: name, Generation: gen}})
}

// forget ends rec, a record recovery found gone or stopped: its
// instance's record if it is that one (same generation and invocation
// id), else the extra record it is.
func (s *state) forget(rec record) error {
	s.mu.Lock()
	if cur, live := s.live[rec.Instance]; live && cur.Generation == rec.Generation && cur.Invocation == rec.Invocation {
		s.mu.Unlock()
		return s.removeRecord(rec.Instance, rec.Generation)
	}
	if k, ok := s.kept[rec.Instance]; ok && k.Generation == rec.Generation && k.Invocation == rec.Invocation {
		s.mu.Unlock()
		return s.removeRecord(rec.Instance, rec.Generation)
	}
	defer s.mu.Unlock()
	for i, x := range s.extra {
		if x.Instance == rec.Instance && x.Invocation == rec.Invocation {
			s.extra = append(s.extra[:i], s.extra[i+1:]...)
			if len(s.extra) == 0 && s.f != nil {
				// The journal holds their damaged entries (compacted):
				// a fresh one leaves them out. One that fails leaves
				// them, to be read again, and found gone, next time.
				return s.compact()
			}
			break
		}
	}
	return nil
}

// records lists the records without an end, and the extra ones read from
// damaged entries, by instance. The record files of the old layout that
// could not be read as one are returned by name in bad.
func (s *state) records() (recs []record, bad []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rec := range s.live {
		recs = append(recs, rec)
	}
	for _, rec := range s.kept {
		recs = append(recs, rec)
	}
	recs = append(recs, s.extra...)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Instance < recs[j].Instance })
	return recs, s.bad, nil
}
