package remote

import (
	"context"
	"errors"
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
	err = s.c.call(ctx, op, "POST", "/v1/instances/"+url.PathEscape(h.instance)+"/reload", body, &res)
	var ae *APIError
	if errors.As(err, &ae) && ae.Kind == runnerapi.KindReloadUnconfirmed {
		return &runtime.ReloadUnconfirmed{Err: err}
	}
	return err
}

var _ runtime.HealthSetter = (*handle)(nil)

// SetHealth asks the runner to change the process's health checks
// (runtime.HealthSetter): they run on the runner, beside the process,
// and their results keep coming through the session's events.
func (h *handle) SetHealth(ctx context.Context, hc *launch.Health) error {
	s, err := h.r.session(ctx)
	if err != nil {
		return err
	}
	op := fmt.Sprintf("change the health checks of %s generation %d", h.instance, h.gen)
	var res runnerapi.HealthSet
	return s.c.call(ctx, op, "POST", "/v1/instances/"+url.PathEscape(h.instance)+"/health",
		runnerapi.SetHealth{Session: s.id, Generation: h.gen, Health: hc}, &res)
}
