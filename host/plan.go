package host

import (
	"errors"

	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// Plan returns the plan an apply of src would carry out if it began now:
// src against what runs, its digests keyed with the host's key. It takes
// no lock and changes nothing.
func (h *Host) Plan(src spec.Source) (*plan.Plan, error) {
	if src.YAML == "" {
		return nil, errors.New("plan: no spec: send the plugins file's content as source.yaml")
	}
	src.DigestKey = "" // the host plans under its own key
	desired, err := h.desired(src)
	if err != nil {
		return nil, err
	}
	return h.planner.Plan(desired, h.State(), plan.Options{})
}
