package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/graftland/graft/spec"
)

// Status is where a plugin stands, as the host reports it
// (docs/plan-format.md, "Changes").
type Status string

// The statuses of a plugin.
const (
	Starting    Status = "starting"
	Running     Status = "running"
	Failed      Status = "failed"      // exited on its own or failed to start; nothing runs
	Stopping    Status = "stopping"    // a stop is under way
	Unconfirmed Status = "unconfirmed" // a stop could not be confirmed: it may still be running
	Standby     Status = "standby"     // floating, and another host leads
	Completed   Status = "completed"   // a one-shot that exited 0; nothing runs, and nothing needs to
)

// Statuses lists every status.
var Statuses = []Status{Starting, Running, Failed, Stopping, Unconfirmed, Standby, Completed}

// State is what runs, as a plan reads it: the input of Diff and Verify,
// and what a saved plan's state digest covers. The host reports more
// (hostapi.Status, what `graft status --json` prints); host.Host.State
// gives this part of it, and ReadState reads this part of a saved status.
type State struct {
	Plugins []Record `json:"plugins"`
}

// Record is one plugin the host runs or tracks, as a plan reads it: what
// its spec decided when it was applied, and where it stands. The host's
// status adds the process facts (hostapi.PluginStatus), which no plan
// reads; its JSON form inlines a Record.
type Record struct {
	Name   string         `json:"name"`
	Run    spec.Placement `json:"run"`
	Status Status         `json:"status"`
	// LastError is why the plugin failed, when it did; a plan gives its
	// first line as the reason to start it again.
	LastError string `json:"lastError,omitempty"`
	// Hash is spec.Spec.Hash of the plugin as it was applied.
	Hash string `json:"hash"`
	// Uses is what the running process was started to use: stops are
	// ordered by it, since the desired spec may no longer say.
	Uses []string `json:"uses,omitempty"`
	// Fields holds spec.FieldDigests of the applied plugin, so a plan can
	// name the fields a new spec changes.
	Fields map[string]string `json:"fields,omitempty"`
	// KeyID names the spec.DigestKey that keyed Hash and Fields: a
	// desired spec is compared with the record only under the same key.
	KeyID string `json:"keyID,omitempty"`
	// Runner is the runner a runner plugin runs on, as the spec names it;
	// empty for the runner embedded in the host.
	Runner string `json:"runner,omitempty"`
	// SocketKey and Sockets are the sockets held for it (listen:), under
	// their key (spec.Plugin.SocketKey), each "NAME ADDRESS", so that a
	// plan can name those it closes.
	SocketKey string   `json:"socketKey,omitempty"`
	Sockets   []string `json:"sockets,omitempty"`
}

// Where names the runner a runner plugin runs on, for messages.
func (r *Record) Where() string {
	if r.Runner == "" {
		return "the embedded runner"
	}
	return "runner " + r.Runner
}

// Applied returns the record of plugin name of s as the host writes it when
// it starts the plugin: everything the spec decides, and no process facts.
func Applied(s *spec.Spec, name string) Record {
	p := s.Plugins[name]
	return Record{
		Name:      name,
		Run:       p.Run,
		Hash:      s.Hash(name),
		Uses:      slices.Sorted(slices.Values(p.Uses)),
		Fields:    spec.FieldDigests(s.Fields(name)),
		KeyID:     s.KeyID(),
		Runner:    p.Runner,
		SocketKey: socketKey(p),
		Sockets:   sockets(p),
	}
}

// socketKey is the key of p's held sockets, if it has any.
func socketKey(p *spec.Plugin) string {
	if len(p.Listen) == 0 {
		return ""
	}
	return p.SocketKey()
}

// sockets are p's held sockets as a Record lists them.
func sockets(p *spec.Plugin) []string {
	var out []string
	for _, l := range p.Listen {
		out = append(out, l.Name+" "+l.Address())
	}
	return out
}

// UnconfirmedDigest stands for a field whose value in effect is not
// known: no desired value equals it.
const UnconfirmedDigest = "unconfirmed"

// UnconfirmedReload is the record of a plugin that was running as was and was
// asked to become want, and may be either: a reload that was signalled
// and did not prove it took. Its hash, and each field in which was and
// want differ, are UnconfirmedDigest, so that the next plan changes it
// again whichever of the two the spec then holds.
func UnconfirmedReload(was, want Record) Record {
	r := was
	r.Hash = UnconfirmedDigest
	r.Fields = maps.Clone(was.Fields)
	for k := range joinKeys(was.Fields, want.Fields) {
		if was.Fields[k] != want.Fields[k] {
			r.Fields[k] = UnconfirmedDigest
		}
	}
	return r
}

// ReadState reads a State from a JSON file, such as one saved from
// `graft status --json`: the plan's part of it, ignoring the host's and
// the processes' facts.
func ReadState(path string) (*State, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("read state %s: %w", path, err)
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("read state %s: %w", path, err)
	}
	return &st, nil
}

// Validate reports the first thing that makes s unusable as Diff's input.
func (s *State) Validate() error {
	seen := map[string]bool{}
	for i, r := range s.Plugins {
		switch {
		case r.Name == "":
			return fmt.Errorf("plugins[%d]: missing name", i)
		case seen[r.Name]:
			return fmt.Errorf("plugins[%d]: plugin %q is listed twice", i, r.Name)
		case !slices.Contains(Statuses, r.Status):
			return fmt.Errorf("plugins[%d] (%s): unknown status %q", i, r.Name, r.Status)
		}
		seen[r.Name] = true
	}
	return nil
}

// Digest identifies the part of s that Diff reads: each plugin's name,
// hash, uses and whether it is failed, unconfirmed or live. A saved plan is
// stale exactly when this changes, since only then could Diff plan
// differently; a pid or an uptime that moved does not make it stale.
func (s *State) Digest() string {
	order := make([]*Record, len(s.Plugins))
	for i := range s.Plugins {
		order[i] = &s.Plugins[i]
	}
	slices.SortFunc(order, func(a, b *Record) int { return strings.Compare(a.Name, b.Name) })
	h := sha256.New()
	var (
		uses []string
		line []byte
	)
	for _, r := range order {
		line = append(line[:0], r.Name...)
		line = append(append(line, 0), r.Hash...)
		line = append(append(line, 0), r.Status.class()...)
		uses = append(uses[:0], r.Uses...)
		slices.Sort(uses)
		for _, u := range uses {
			line = append(append(line, 0), u...)
		}
		h.Write(append(line, '\n'))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// class is the part of a status that Diff branches on.
func (st Status) class() string {
	if st == Failed || st == Unconfirmed || st == Completed {
		return string(st)
	}
	return "live"
}
