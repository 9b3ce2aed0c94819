package remote

import (
	"context"
	"fmt"
	"net/url"

	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
)

var _ runtime.Reloader = (*handle)(nil)

// Reload asks the runner to reload the process (runtime.Reloader): the
// runner runs the check and the command where the process runs, as its
// user, and checks that it took (docs/runner-api.md, "Reload").
func (h *handle) Reload(ctx context.Context, l launch.Spec) error {
	s, err := h.r.session(ctx)
	if err != nil {
		return err
	}
	op := fmt.Sprintf("reload %s generation %d", h.instance, h.gen)
	body := runnerapi.Reload{Session: s.id, Generation: h.gen,
		Spec: launch.Spec{Reload: l.Reload, Ready: l.Ready, Health: l.Health}}
	var res runnerapi.Reloaded
	return s.c.call(ctx, op, "POST", "/v1/instances/"+url.PathEscape(h.instance)+"/reload", body, &res)
}
