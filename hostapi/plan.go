package hostapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// Plan asks the host for the plan of src against what it runs (POST
// /v1/plan: the plan an apply of src would carry out if it began now, its
// digests keyed with the host's key), in its JSON form
// (docs/plan-format.md), which plan.ReadJSON reads. Problems in src come
// back as the spec's errors' text.
func (c *Client) Plan(ctx context.Context, src Source) (json.RawMessage, error) {
	body, err := json.Marshal(PlanRequest{Source: src})
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, http.MethodPost, "/v1/plan", body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var p json.RawMessage
	if err := json.NewDecoder(limitAnswer(resp.Body)).Decode(&p); err != nil {
		return nil, fmt.Errorf("read the host's plan: %w", err)
	}
	return p, nil
}
