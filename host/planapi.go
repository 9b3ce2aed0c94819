package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/graftland/graft/plan"
)

// PlanRequest asks the host for the plan of a spec against what it runs:
// POST /v1/plan, which graft plan uses when a host runs. The host makes
// it, since only it holds the digest key that the running state's digests
// of env values are keyed with.
type PlanRequest struct {
	// Source is the desired spec.
	Source plan.Source `json:"source"`
}

// Plan returns the plan an apply of src would carry out if it began now:
// src against what runs, its digests keyed with the host's key. It takes
// no lock and changes nothing.
func (h *Host) Plan(src plan.Source) (*plan.Plan, error) {
	if src.YAML == "" {
		return nil, errors.New("plan: no spec: send the plugins file's content as source.yaml")
	}
	src.DigestKey = "" // the host plans under its own key
	desired, err := h.desired(src)
	if err != nil {
		return nil, err
	}
	return plan.Diff(desired, h.State())
}

func (h *Host) servePlan(w http.ResponseWriter, r *http.Request) {
	var req PlanRequest
	if !readJSON(w, r, &req) {
		return
	}
	p, err := h.Plan(req.Source)
	if err != nil {
		writeError(w, statusFor(err), errorBody(err))
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// Plan asks the host for the plan of src against what it runs (see
// Host.Plan). Problems in src come back as the spec.Errors' text.
func (c *Client) Plan(ctx context.Context, src plan.Source) (*plan.Plan, error) {
	body, err := json.Marshal(PlanRequest{Source: src})
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, http.MethodPost, "/v1/plan", body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var p plan.Plan
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		return nil, fmt.Errorf("read the host's plan: %w", err)
	}
	if p.Format != plan.Format {
		return nil, fmt.Errorf("the host's plan has format %q, want %q: is the host another version of graft? (graft status shows its version)", p.Format, plan.Format)
	}
	return &p, nil
}
