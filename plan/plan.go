// Package plan owns the diff of a desired spec against running state, the
// ordered step graph that carries it out, and its text and JSON renderings.
package plan

import (
	"github.com/graftland/graft/spec"
)

// Format names the JSON form of a Plan; it changes only with a new major
// version of that form.
const Format = "graft.plan/v1"

// Plan is the diff of a desired spec against running state and the graph
// of steps that carries it out. Its JSON form is documented in
// docs/plan-format.md.
type Plan struct {
	Format  string   `json:"format"`
	Project string   `json:"project"`
	Changes []Change `json:"changes"`
	Steps   []Step   `json:"steps"`
	// Waves groups the steps by depth in the graph: every step of a wave
	// waits only on steps of earlier waves.
	Waves   [][]string `json:"waves"`
	Summary Summary    `json:"summary"`
	// Desired is spec.Spec.Digest of the desired spec.
	Desired string `json:"desired"`
	// State is State.Digest of the running state the plan was made against.
	State string `json:"state"`
	// KeyID names the spec.DigestKey of the desired spec's digests (Desired
	// and each change's Hash): the host's, or a one-time key for a plan
	// made without a host.
	KeyID string `json:"keyID,omitempty"`
	// Source is the desired spec itself, in plans saved to apply later.
	Source *spec.Source `json:"source,omitempty"`
}

// Change is what the plan does with one plugin, and why.
type Change struct {
	Plugin string `json:"plugin"`
	Action Action `json:"action"`
	// Reason says why, for people: the fields that changed, or the
	// dependency that causes a restart.
	Reason string `json:"reason"`
	// Run is the desired placement, or the running one for a stop.
	Run spec.Placement `json:"run"`
	// Status is the running status before the plan; empty when not running.
	Status Status `json:"status,omitempty"`
	// Fields are the spec fields that changed, for a replace or a start of
	// a failed plugin whose spec changed too.
	Fields []string `json:"fields,omitempty"`
	// Cause is, for a restart, the chain of uses from this plugin to the
	// plugin whose start or replacement causes it: [api, cache, db].
	Cause []string `json:"cause,omitempty"`
	// Hash is the desired spec.Spec.Hash of the plugin; empty for a stop.
	Hash string `json:"hash,omitempty"`
	// Order is "start-first" for a replace or a restart whose new process
	// starts beside the old one (spec.Update): one swap step, and its
	// consumers go on. Empty for the others.
	Order string `json:"order,omitempty"`
	// Closes lists the held sockets its apply closes, each "NAME ADDRESS":
	// those of its running process that neither it nor a replica that
	// shares them keeps (docs/semantics.md, "Held sockets").
	Closes []string `json:"closes,omitempty"`
}

// Step is one stop or start in the plan's graph.
type Step struct {
	ID     string `json:"id"`
	Op     Op     `json:"op"`
	Plugin string `json:"plugin"`
	// After lists the steps that must finish before this one starts, or,
	// for an edge with a condition, reach it.
	After []Edge `json:"after"`
}

// Summary counts the changes by action (each field named as its action,
// action.go), and the steps and waves.
type Summary struct {
	Start   int `json:"start"`
	Stop    int `json:"stop"`
	Replace int `json:"replace"`
	Restart int `json:"restart"`
	Keep    int `json:"keep"`
	// Reload and Update count the changes carried out on running
	// plugins (inplace.go); left out of the JSON when zero, as plans
	// before them had neither.
	Reload int `json:"reload,omitempty"`
	Update int `json:"update,omitempty"`
	Steps  int `json:"steps"`
	Waves  int `json:"waves"`
}

// HasChanges reports whether carrying out the plan would do anything.
func (p *Plan) HasChanges() bool { return len(p.Steps) > 0 }
