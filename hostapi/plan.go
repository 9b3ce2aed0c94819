package hostapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/graftland/graft/plan"
)

// Plan asks the host for the plan of src against what it runs (POST
// /v1/plan: the plan an apply of src would carry out if it began now, its
// digests keyed with the host's key). Problems in src come back as the
// spec.Errors' text.
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
