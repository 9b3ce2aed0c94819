// Package fence is a durable ledger of the highest generation seen per key,
// for the external system that fences graft's plugins (docs/semantics.md,
// "Fencing"): it admits a write carrying a generation at least as high as
// any seen for its key, and rejects lower ones, so a slow old copy of a
// plugin cannot overwrite what its replacement wrote.
//
// It only checks generations. It does not undo a write that already
// happened, and it does not make a call happen exactly once. Generations
// are counted by each runner on its own: two runners' generations of one
// instance name are not comparable, so key the ledger by instance and
// runner.
package fence

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"

	"github.com/graftland/graft/internal/atomicfile"
)

// ErrStale is what a rejected Admit's error wraps: the generation is lower
// than one already seen for its key.
var ErrStale = errors.New("stale generation")

// ErrInUse is returned by Open when another Ledger, in this process or
// another, holds the file.
var ErrInUse = errors.New("ledger in use")

// ErrClosed is returned by Admit on a closed Ledger.
var ErrClosed = errors.New("ledger closed")

// StaleError is the error of an Admit whose generation is stale. It
// wraps ErrStale.
type StaleError struct {
	Key        string
	Generation int64 // what Admit was given
	Highest    int64 // the highest already seen for Key
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("stale generation %d for key %q: generation %d was already seen", e.Generation, e.Key, e.Highest)
}

func (e *StaleError) Unwrap() error { return ErrStale }

// Ledger remembers, in one file, the highest generation admitted for each
// key. It is safe for concurrent use.
type Ledger struct {
	path string

	mu      sync.Mutex
	highest map[string]int64 // as on disk: changed only after a write
	lock    *os.File         // the flock on path+".lock"; nil where there is none
	closed  bool
}

// file is the ledger's JSON document.
type file struct {
	Highest map[string]int64 `json:"highest"`
}

// Open opens the ledger kept in the file at path: a missing file is an
// empty ledger. On Unix it holds an exclusive lock on path+".lock" until
// Close, so one ledger file has one user at a time; a second Open of it
// fails with an error wrapping ErrInUse.
func Open(path string) (*Ledger, error) {
	lock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	highest, err := load(path)
	if err != nil {
		unlock(lock)
		return nil, err
	}
	return &Ledger{path: path, highest: highest, lock: lock}, nil
}

// load reads the ledger file at path.
func load(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("read ledger %s: %w", path, err)
	}
	if f.Highest == nil {
		f.Highest = map[string]int64{}
	}
	return f.Highest, nil
}

// Admit admits generation for key if it is at least the highest seen for
// key, and returns a *StaleError otherwise. A higher generation is written
// to the file, synced, before Admit returns; if that write fails the
// ledger is unchanged and Admit returns the error. Equal generations are
// admitted: one process writes many times.
func (l *Ledger) Admit(key string, generation int64) error {
	if generation < 0 {
		return fmt.Errorf("admit %q: generation %d is negative", key, generation)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	highest, seen := l.highest[key]
	if generation < highest {
		return &StaleError{Key: key, Generation: generation, Highest: highest}
	}
	if seen && generation == highest {
		return nil // already on disk
	}
	next := maps.Clone(l.highest)
	next[key] = generation
	b, err := json.MarshalIndent(file{Highest: next}, "", "  ")
	if err != nil {
		return fmt.Errorf("admit %q: %w", key, err)
	}
	// The mutex is held across the write: files written in another order
	// than admitted could leave an older generation on disk.
	if err := atomicfile.Write(l.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("admit %q: %w", key, err)
	}
	l.highest = next
	return nil
}

// Highest returns the highest generation admitted for key, or 0 if none
// was.
func (l *Ledger) Highest(key string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.highest[key]
}

// Close releases the ledger's lock. Admit fails after it; Close again
// does nothing.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return unlock(l.lock)
}
