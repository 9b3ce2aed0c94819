package remotes

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/remote"
	"github.com/graftland/graft/spec"
)

// The host records the session it holds with each runner in
// runner-sessions.json, so that a host restarted or upgraded while the
// lease runs resumes it there (docs/upgrade.md): a runner of its own (one
// with an address), and the runner embedded in the host (address ""),
// which a host's upgrade hands over to the next program (Handover). A record is written when a session opens and removed
// when the host ends the session on purpose (Close, Prune); a host killed
// outright, or one that executes its upgrade, leaves it for the next.

// SessionsFile is the record of the sessions, in the host's state dir.
const SessionsFile = statedir.RunnerSessions

// maxSessionsFile bounds what is read of the record.
const maxSessionsFile = 1 << 20

// sessionRecord is one session in the record.
type sessionRecord struct {
	Runner  string `json:"runner"`
	Address string `json:"address"`
	Session string `json:"session"`
}

type sessionsFile struct {
	Sessions []sessionRecord `json:"sessions"`
}

// sessions is the record, as the host holds it: by runner name and
// address (runnerKey). Its own lock is taken last, so a Remote may tell
// of a session while it holds its own.
type sessions struct {
	path string
	mu   sync.Mutex
	ids  map[string]sessionRecord
}

func runnerKey(name, address string) string { return name + "\x00" + address }

// loadSessions reads the record in dir; one that cannot be read is none
// (logged by the caller): its sessions run out on their runners.
func loadSessions(dir string) (*sessions, error) {
	s := &sessions{path: filepath.Join(dir, SessionsFile), ids: map[string]sessionRecord{}}
	b, err := safefs.ReadFile(s.path, maxSessionsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	var f sessionsFile
	if err := json.Unmarshal(b, &f); err != nil {
		return s, err
	}
	for _, r := range f.Sessions {
		s.ids[runnerKey(r.Runner, r.Address)] = r
	}
	return s, nil
}

// get is the session recorded for the runner.
func (s *sessions) get(name, address string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[runnerKey(name, address)].Session
}

// set records id as the runner's session; "" removes the runner's.
func (s *sessions) set(name, address, id string) error {
	return s.update(func(ids map[string]sessionRecord) {
		if id == "" {
			delete(ids, runnerKey(name, address))
		} else {
			ids[runnerKey(name, address)] = sessionRecord{Runner: name, Address: address, Session: id}
		}
	})
}

// keep removes the record of every runner but those keep names.
func (s *sessions) keep(keep map[string]bool) error {
	return s.update(func(ids map[string]sessionRecord) {
		for k := range ids {
			if !keep[k] {
				delete(ids, k)
			}
		}
	})
}

// update changes the record and writes it, atomically; an empty record
// is no file.
func (s *sessions) update(change func(map[string]sessionRecord)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := len(s.ids)
	change(s.ids)
	if len(s.ids) == 0 {
		if before == 0 {
			return nil
		}
		if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	var f sessionsFile
	for _, r := range s.ids {
		f.Sessions = append(f.Sessions, r)
	}
	sort.Slice(f.Sessions, func(i, j int) bool {
		return runnerKey(f.Sessions[i].Runner, f.Sessions[i].Address) < runnerKey(f.Sessions[j].Runner, f.Sessions[j].Address)
	})
	b, _ := json.Marshal(f) // plain fields: always marshals
	return atomicfile.Write(s.path, append(b, '\n'), 0o600)
}

// Resumption is a session with a runner that an earlier host held and
// this one resumed, or tried to: Procs run under it, on Remote. Err says
// why it could not be: the runner could not be reached, say. A session
// the runner no longer has is none, with no error.
type Resumption struct {
	Runner string
	Remote *remote.Remote
	Procs  []remote.Resumed
	Err    error
}

// Resume resumes, once per runner, the session recorded for each runner
// of desired's runner plugins, and returns what it found. The record
// keeps only the sessions resumed. Called before anything starts on the
// runners. The runner embedded in the host starts here if it has a
// session to resume: it takes back what the host's last program handed
// over to it.
func (g *Registry) Resume(ctx context.Context, desired *spec.Spec) []Resumption {
	var out []Resumption
	keep := map[string]bool{}
	seen := map[string]bool{}
	for _, p := range desired.Plugins {
		if !p.Run.Traits().Runner || seen[p.Runner] {
			continue
		}
		seen[p.Runner] = true
		var address string // "": the runner embedded in the host
		if rs := desired.Runners[p.Runner]; rs != nil {
			address = rs.Address
		}
		id := g.sessions.get(runnerName(p.Runner), address)
		if id == "" {
			continue
		}
		res := Resumption{Runner: p.Runner}
		r, err := g.resolve(desired, p.Runner)
		if err == nil {
			res.Remote = r
			res.Procs, err = r.Resume(ctx, id)
		}
		res.Err = err
		if err == nil && res.Remote.SessionID() != "" {
			keep[runnerKey(runnerName(p.Runner), address)] = true
		}
		out = append(out, res)
	}
	if err := g.sessions.keep(keep); err != nil {
		g.opt.Logger.Error("record the sessions with runners", "err", err)
	}
	return out
}

// Separate reports whether pl is the placement of a runner that is no
// part of the host: its plugins, and its session, outlive the host's
// program (docs/upgrade.md).
func (g *Registry) Separate(pl runtime.Placement) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, e := range g.byKey {
		if runtime.Placement(e.r) == pl {
			return e.separate
		}
	}
	return false
}
