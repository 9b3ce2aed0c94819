package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/graftland/graft/host/remotes"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/spec"
)

// The files of a state dir (internal/statedir).
const (
	lockFile     = statedir.HostLock
	appliedFile  = statedir.Applied
	logDir       = statedir.Logs
	wasmCacheDir = statedir.WasmCache
	digestsDir   = statedir.Digests
	instancesDir = statedir.Instances // local.Options.Records
)

// applied is the last applied spec, as stored in the state dir.
type applied struct {
	Source spec.Source `json:"source"`
	// Digest is the spec's spec.Spec.Digest.
	Digest string    `json:"digest"`
	At     time.Time `json:"at"`

	// parsed is Source, parsed (and keyed with the host's key), once: when
	// the host reads the file, or by the apply that records it. Status,
	// restarts and the start-up's apply use it and parse nothing.
	parsed *spec.Spec
}

// maxApplied bounds applied.json: a spec, as large as a request may be,
// and a little more.
const maxApplied = 2 * hostapi.MaxBody

// KeptSpecError is a last applied spec (applied.json) that cannot be read:
// the host starts without it and runs nothing until an apply replaces it,
// or graft down removes it.
type KeptSpecError struct {
	Path string
	Err  error
}

func (e *KeptSpecError) Error() string {
	return fmt.Sprintf("the last applied spec, %s, cannot be read: %v; the host runs nothing until graft apply replaces it (or graft down removes it)", e.Path, e.Err)
}

func (e *KeptSpecError) Unwrap() error { return e.Err }

// Hint tells the operator what to do about it.
func (e *KeptSpecError) Hint() string {
	return "graft apply FILE (to replace it), or graft down (to remove it)"
}

// loadApplied reads the last applied spec; nil if none was. One that
// cannot be read is a *KeptSpecError.
func loadApplied(dir string, dg spec.Digester) (*applied, error) {
	path := filepath.Join(dir, appliedFile)
	b, err := safefs.ReadFile(path, maxApplied)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &KeptSpecError{Path: path, Err: err}
	}
	var a applied
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, &KeptSpecError{Path: path, Err: err}
	}
	if a.parsed, err = a.Source.SpecWith(dg); err != nil {
		return nil, &KeptSpecError{Path: path, Err: err}
	}
	return &a, nil
}

// recordApplied records the spec an apply is bringing about, before the
// apply begins, so that a host started again converges on it. The same
// spec as the one recorded (the start-up's reapply, an apply that changes
// nothing) is not written again: a host on a full disk still starts. The
// file is replaced whole (atomicfile): a failed write, a full disk, leaves
// the one before, and the host keeps it as its last applied spec.
func (h *Host) recordApplied(a *applied) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	h.mu.Lock()
	old := h.spec
	h.mu.Unlock()
	if old != nil {
		same := *a
		same.At = old.At
		if b2, err := json.MarshalIndent(&same, "", "  "); err == nil {
			if o, err := json.MarshalIndent(old, "", "  "); err == nil && string(o) == string(b2) {
				return nil
			}
		}
	}
	if err := atomicfile.Write(filepath.Join(h.dir, appliedFile), append(b, '\n'), 0o600); err != nil {
		return err
	}
	h.mu.Lock()
	h.spec, h.specErr = a, nil
	h.mu.Unlock()
	h.changed.notify()
	return nil
}

// forgetApplied removes the last applied spec, once graft down has
// stopped everything.
func (h *Host) forgetApplied() error {
	err := os.Remove(filepath.Join(h.dir, appliedFile))
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err == nil {
		h.mu.Lock()
		h.spec, h.specErr = nil, nil
		h.mu.Unlock()
		h.changed.notify()
	}
	return err
}

// validateStateDir makes the state dir and the subdirectories the host uses,
// and checks that each can be trusted (safefs.Dir): a directory another
// user may write, or a link where a subdirectory goes, is refused. The
// embedded runner's is checked too, if there is one (the runner checks it
// again, with its own subdirectories).
func validateStateDir(dir string) error {
	if err := safefs.Root(dir, 0o750); err != nil {
		return err
	}
	for _, d := range []string{logDir, instancesDir, wasmCacheDir, digestsDir} {
		if err := safefs.Dir(filepath.Join(dir, d), 0o750); err != nil {
			return err
		}
	}
	return safefs.Check(filepath.Join(dir, remotes.Dir))
}

// cleanCache removes from the module cache whatever the host would not
// have written there: wazero reads a cached module by its name, through a
// link or from a named pipe as well. Its directories (one per wazero
// version) must pass safefs.Dir; a file in them that is not a regular file
// of the host's user, under one name, is removed.
func (h *Host) cleanCache() error {
	cache := filepath.Join(h.dir, wasmCacheDir)
	ents, err := os.ReadDir(cache)
	if err != nil {
		return err
	}
	for _, e := range ents {
		sub := filepath.Join(cache, e.Name())
		if e.Type().IsRegular() {
			continue // not wazero's
		}
		if err := safefs.Check(sub); err != nil {
			return err
		}
		files, err := os.ReadDir(sub)
		if err != nil {
			return err
		}
		for _, f := range files {
			p := filepath.Join(sub, f.Name())
			if err := safefs.CheckFile(p); err != nil {
				h.log.Warn("removing from the module cache what the host did not write", "path", p, "err", err)
				if err := os.RemoveAll(p); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
