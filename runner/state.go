package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/safefs"
)

// The files of a state dir (docs/runner-api.md, "The state dir").
const (
	lockFile       = "runner.lock" // held (flock) by the one runner; holds its pid
	generationsDir = "generations" // <escaped instance>: its last generation
	recordsDir     = "records"     // <escaped instance>.json: its process that may run
)

// maxStateFile bounds a generation or a record file: the runner writes
// far less; a larger file is not one of its own.
const maxStateFile = 64 << 10

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
}

// state is the runner's state dir: the generation of every instance ever
// started and the records of the processes that may run.
type state struct {
	dir string

	mu sync.Mutex
	// last holds, by instance, the highest generation known: on disk or
	// ever attempted. A number is taken before its write, so a write that
	// failed part way never gets its number handed out later.
	last map[string]int64

	commits committer // the writes of generations and records
}

func openState(dir string) (*state, error) {
	for _, d := range []string{generationsDir, recordsDir} {
		if err := safefs.Dir(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
		removeTemporary(filepath.Join(dir, d))
	}
	// The directories just made, if they were, are durable before any
	// generation is written in them.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := atomicfile.SyncDir(d); err != nil {
			return nil, fmt.Errorf("sync the state dir: %w", err)
		}
	}
	return &state{dir: dir, last: map[string]int64{}}, nil
}

// removeTemporary removes what atomicfile.Write left of writes that a
// crash cut short: escaped names never start with a '.', its temporary
// files always do.
func removeTemporary(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func (s *state) generationPath(name string) string {
	return filepath.Join(s.dir, generationsDir, escape(name))
}

func (s *state) recordPath(name string) string {
	return filepath.Join(s.dir, recordsDir, escape(name)+".json")
}

// next takes the next generation of instance name for the process rec
// describes, and writes it, and rec with it, in one group
// (committer.write): both are on disk, synced with their directories,
// before it returns the generation; an *ExhaustedError after
// math.MaxInt64. When the generation was written but the record was not,
// it returns the generation with the *StateError. Callers never ask for
// one instance from two goroutines at once.
func (s *state) next(name string, rec record) (int64, error) {
	last, err := s.lastOf(name)
	if err != nil {
		return 0, err
	}
	if last == math.MaxInt64 {
		return 0, &ExhaustedError{Instance: name}
	}
	gen := last + 1
	s.mu.Lock()
	s.last[name] = max(s.last[name], gen) // taken now, whatever the write does
	s.mu.Unlock()
	rec.Instance, rec.Generation = name, gen
	b, err := json.Marshal(rec)
	if err != nil {
		return 0, err
	}
	gw := &fileWrite{path: s.generationPath(name), data: []byte(strconv.FormatInt(gen, 10) + "\n")}
	rw := &fileWrite{path: s.recordPath(name), data: append(b, '\n')}
	s.commits.write(gw, rw)
	if gw.err != nil || rw.err != nil {
		// Nothing runs of a start refused: its record goes, if its
		// rename was made (a record of another generation stays).
		s.removeRecord(name, gen)
	}
	if gw.err != nil {
		return 0, &StateError{Op: fmt.Sprintf("write generation %d of %s", gen, name), Err: gw.err}
	}
	if rw.err != nil {
		return gen, &StateError{Op: fmt.Sprintf("record generation %d of %s", gen, name), Err: rw.err}
	}
	return gen, nil
}

// lastOf is the highest generation of name known: handed out, tried or
// recorded.
func (s *state) lastOf(name string) (int64, error) {
	s.mu.Lock()
	last, known := s.last[name]
	s.mu.Unlock()
	if known {
		return last, nil
	}
	n, err := s.readGeneration(name)
	if err != nil {
		return 0, &StateError{Op: "read the generation of " + name, Err: err}
	}
	return n, nil
}

// canAdvance reports an *ExhaustedError when name has no next generation,
// so that a start that could not take one stops nothing first.
func (s *state) canAdvance(name string) error {
	last, err := s.lastOf(name)
	if err == nil && last == math.MaxInt64 {
		return &ExhaustedError{Instance: name}
	}
	return err
}

// atLeast makes the next generation of name larger than gen: a record may
// name a generation the file does not hold, were the file ever lost.
func (s *state) atLeast(name string, gen int64) error {
	s.mu.Lock()
	last, known := s.last[name]
	s.mu.Unlock()
	if !known {
		n, err := s.readGeneration(name)
		if err != nil {
			return err
		}
		last = n
	}
	s.mu.Lock()
	s.last[name] = max(s.last[name], last, gen)
	s.mu.Unlock()
	return nil
}

// handedOut is the last generation of name taken: none above it ever ran.
func (s *state) handedOut(name string) (int64, error) {
	s.mu.Lock()
	last, known := s.last[name]
	s.mu.Unlock()
	if known {
		return last, nil
	}
	return s.readGeneration(name)
}

// readGeneration reads the last generation of name; 0 when it never ran.
func (s *state) readGeneration(name string) (int64, error) {
	b, err := safefs.ReadFile(s.generationPath(name), maxStateFile)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: not a generation: %q", s.generationPath(name), b)
	}
	return n, nil
}

// writeRecord writes rec over the record of its instance, durably, in a
// group with the other writes under way.
func (s *state) writeRecord(rec record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	w := &fileWrite{path: s.recordPath(rec.Instance), data: append(b, '\n')}
	s.commits.write(w)
	if w.err != nil {
		return &StateError{Op: fmt.Sprintf("record generation %d of %s", rec.Generation, rec.Instance), Err: w.err}
	}
	return nil
}

// recordPID writes rec, the record of a process that runs now, with its
// pid and start time, over the record written before its spawn, without
// syncing it: the pid is looked up only by a runner of the same boot
// (recover.go), which finds the file whether it was synced or not; a
// crash of the machine leaves none of the process, and its generation is
// in the generation's file, synced before the spawn.
func (s *state) recordPID(rec record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := replace(s.recordPath(rec.Instance), append(b, '\n')); err != nil {
		return &StateError{Op: fmt.Sprintf("record the pid of generation %d of %s", rec.Generation, rec.Instance), Err: err}
	}
	return nil
}

// removeRecord forgets generation gen of name once its exit is confirmed,
// and leaves a record of another generation alone. The removal is not
// synced: a record that comes back after a crash names a process the next
// runner finds gone.
func (s *state) removeRecord(name string, gen int64) error {
	path := s.recordPath(name)
	b, err := safefs.ReadFile(path, maxStateFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var rec record
	if json.Unmarshal(b, &rec) == nil && rec.Generation != gen {
		return nil
	}
	err = os.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// records reads every record. A file that cannot be read as one is
// returned by name in bad.
func (s *state) records() (recs []record, bad []string, err error) {
	dir := filepath.Join(s.dir, recordsDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		b, err := safefs.ReadFile(path, maxStateFile)
		var rec record
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err == nil && (checkName(rec.Instance) != nil || s.recordPath(rec.Instance) != path || rec.Invocation == "") {
			err = errors.New("not a record of this runner")
		}
		if err != nil {
			bad = append(bad, path)
			continue
		}
		recs = append(recs, rec)
	}
	return recs, bad, nil
}
