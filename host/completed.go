package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

// completedFile records the one-shots that completed, so that a host
// started again (after a crash, a restart, an upgrade) does not run them
// again (docs/state-dir.md, docs/semantics.md "One-shot plugins").
const completedFile = statedir.Completed

// maxCompleted bounds completed.json: a few hundred bytes a plugin, for
// more plugins than a spec holds.
const maxCompleted = 4 << 20

// completedDoc is completed.json.
type completedDoc struct {
	Plugins map[string]completedRecord `json:"plugins"`
}

// completedRecord is one completed one-shot: what identifies the entry it
// ran (plan.Record's Hash and KeyID: a changed entry, or a new digest key,
// no longer matches), and what graft status shows of it.
type completedRecord struct {
	Hash       string    `json:"hash"`
	KeyID      string    `json:"keyID"`
	Instance   string    `json:"instance,omitempty"`
	Generation int64     `json:"generation,omitempty"`
	Since      time.Time `json:"since"`
	Restarts   int       `json:"restarts,omitempty"`
	LastError  string    `json:"lastError,omitempty"`
}

// completions keeps completed.json in step with the host's completed
// one-shots.
type completions struct {
	mu sync.Mutex // held through a snapshot and its write, so writes keep their order
	// written is what the file holds, as the host read or last wrote it;
	// nil when unknown (unreadable), so the next sync writes it.
	written []byte
	// frozen: the host is stopping everything (its shutdown, graft down),
	// which must not count as the one-shots leaving.
	frozen bool
}

// encodeCompleted is the file's contents for recs, the same bytes for the
// same records.
func encodeCompleted(recs map[string]completedRecord) []byte {
	b, err := json.MarshalIndent(completedDoc{Plugins: recs}, "", "  ")
	if err != nil {
		panic(err) // strings, numbers and times always encode
	}
	return append(b, '\n')
}

// loadCompleted reads completed.json: no file is no record. The bytes
// read come back too, nil when the file cannot be used.
func loadCompleted(dir string) (map[string]completedRecord, []byte, error) {
	path := filepath.Join(dir, completedFile)
	b, err := safefs.ReadFile(path, maxCompleted)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, encodeCompleted(map[string]completedRecord{}), nil
	}
	if err != nil {
		return nil, nil, err
	}
	// Fields it does not know are ignored: a host of an older version
	// still reads what a newer one wrote.
	var doc completedDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	for name, r := range doc.Plugins {
		if !spec.ValidName(name) || r.Hash == "" {
			return nil, nil, fmt.Errorf("read %s: plugins[%q]: not a plugin name with a hash", path, name)
		}
	}
	return doc.Plugins, b, nil
}

// restoreCompleted brings back, as completed entries, the one-shots that
// completed under an earlier host of this state dir and whose entries the
// last applied spec still has, unchanged: the start-up's apply keeps them.
// A file that cannot be read is logged and ignored: its one-shots run
// again, and the host starts all the same.
func (h *Host) restoreCompleted() {
	recs, raw, err := loadCompleted(h.dir)
	h.completed.written = raw
	if err != nil {
		h.log.Error("the record of completed one-shots cannot be read; they run again", "err", err)
		return
	}
	var kept *spec.Spec
	if h.spec != nil {
		kept = h.spec.parsed
	}
	for _, name := range slices.Sorted(maps.Keys(recs)) {
		r := recs[name]
		if kept == nil || kept.Plugins[name] == nil || !kept.Plugins[name].Once.On ||
			kept.Hash(name) != r.Hash || kept.KeyID() != r.KeyID {
			h.log.Info("a completed one-shot's entry is not the last applied one; it runs again", "plugin", name)
			continue
		}
		p := kept.Plugins[name]
		req := runtime.Request{Project: kept.Name, Dir: kept.Dir, Log: h.log}.For(p)
		st := runtime.State{
			Identity: runtime.Identity{ID: r.Instance, Generation: r.Generation},
			Since:    r.Since, Restarts: r.Restarts, LastError: r.LastError,
		}
		e := &entry{record: plan.Applied(kept, name), supervisor: runtime.NewCompleted(nil, req, st)}
		e.supervisor.OnChange(h.changed.notify)
		h.plugins[name] = e
		h.log.Info("a one-shot completed under an earlier host; it is not run again", "plugin", name, "since", r.Since)
	}
}

// syncCompleted writes completed.json anew when the host's completed
// one-shots changed: one completed, or one that had completed left the
// spec, was replaced, runs again or failed. A write that fails is logged:
// the one-shot would run again after a restart, nothing worse.
func (h *Host) syncCompleted() {
	c := &h.completed
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		return
	}
	recs := map[string]completedRecord{}
	h.mu.Lock()
	for name, e := range h.plugins {
		st := e.supervisor.State()
		if st.Status != runtime.Completed {
			continue
		}
		recs[name] = completedRecord{
			Hash: e.record.Hash, KeyID: e.record.KeyID,
			Instance: st.Identity.ID, Generation: st.Identity.Generation,
			Since: st.Since, Restarts: st.Restarts, LastError: st.LastError,
		}
	}
	h.mu.Unlock()
	b := encodeCompleted(recs)
	if bytes.Equal(b, c.written) {
		return
	}
	if err := atomicfile.Write(filepath.Join(h.dir, completedFile), b, 0o600); err != nil {
		h.log.Error("record the completed one-shots; they would run again after a restart", "err", err)
		c.written = nil
		return
	}
	c.written = b
}

// freezeCompleted stops syncCompleted for good: what the host's shutdown
// and graft down stop has not left the spec.
func (h *Host) freezeCompleted() {
	h.completed.mu.Lock()
	h.completed.frozen = true
	h.completed.mu.Unlock()
}

// forgetCompleted removes completed.json, once graft down has stopped
// everything: the next apply is a fresh deploy, which runs its one-shots.
func (h *Host) forgetCompleted() error {
	err := os.Remove(filepath.Join(h.dir, completedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
