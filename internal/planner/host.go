package planner

import (
	"fmt"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// Host is the planner of a host: its state dir's digest key keys the
// digests of every spec it applies and every plan it makes, and a saved
// plan is checked under the key it says it was made with.
type Host struct{ key spec.DigestKey }

// OpenHost is the planner of the host of state dir dir, whose key it
// makes at random the first time.
func OpenHost(dir string) (*Host, error) {
	k, err := openKey(dir)
	if err != nil {
		return nil, err
	}
	return &Host{key: k}, nil
}

// Keyed is s with its digests under the host's key.
func (h *Host) Keyed(s *spec.Spec) *spec.Spec { return s.WithKey(h.key) }

// Plan is the plan of desired, keyed (Keyed), against what runs.
func (h *Host) Plan(desired *spec.Spec, running *plan.State, opt plan.Options) (*plan.Plan, error) {
	return plan.DiffWith(desired, running, opt)
}

// Saved checks p, a saved plan of src, against desired (src, keyed) and
// what runs, and returns it once it is the plan they give: it is stale
// (a *hostapi.StaleError) when what runs changed since it was made, its
// spec is not the one it was made from, or it was made under a key that
// cannot be checked here; it is refused (a *plan.VerifyError) when its
// steps are not the ones its spec and that state give.
func (h *Host) Saved(p *plan.Plan, src spec.Source, desired *spec.Spec, running *plan.State) (*plan.Plan, error) {
	keyed, err := h.savedSpec(p, src, desired)
	if err != nil {
		return nil, err
	}
	if p.State != running.Digest() {
		return nil, &hostapi.StaleError{Reason: "the running state changed since the plan was made"}
	}
	if p.Desired != keyed.Digest() {
		return nil, &hostapi.StaleError{Reason: "the plan's spec is not the one it was made from"}
	}
	// The digests tie the plan to this spec and state; its steps must be
	// the ones they give, checked before anything runs.
	if err := p.Verify(keyed, running); err != nil {
		return nil, err
	}
	return p, nil
}

// savedSpec is desired under the key a saved plan says it was made with,
// the host's or, for a plan made without a host, the one-time key its
// source carries: its Digest is what the plan's Desired must equal, and
// its hashes those of the plan's changes. A plan made under another key
// is stale: its digests cannot be checked.
func (h *Host) savedSpec(p *plan.Plan, src spec.Source, desired *spec.Spec) (*spec.Spec, error) {
	switch {
	case p.KeyID == "" || p.KeyID == h.key.ID():
		// "": a plan of a graft before keyed digests; one with env values
		// does not match, and is stale.
		return desired, nil
	case src.DigestKey != "":
		k, err := spec.ParseDigestKey(src.DigestKey)
		if err != nil || k.ID() != p.KeyID {
			return nil, &hostapi.StaleError{Reason: "its source's digest key is not the one its keyID names: the plan file was changed"}
		}
		return desired.WithKey(k), nil
	}
	return nil, &hostapi.StaleError{Reason: fmt.Sprintf("it was made with digest key %s, not this host's (%s): against another host, or before the state dir's key was made again", p.KeyID, h.key.ID())}
}
