package floating

import (
	"context"

	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runtime"
)

var _ runtime.Reloader = (*handle)(nil)

// Reload reloads the plugin where this host leads and runs it
// (runtime.Reloader). A host that follows has nothing running to reload:
// the plugin starts with the new config whenever this host comes to
// lead.
func (h *handle) Reload(ctx context.Context, l launch.Spec) error {
	h.mu.Lock()
	sup := h.sup
	if !h.leading {
		sup = nil
	}
	h.mu.Unlock()
	if sup == nil {
		return nil
	}
	return sup.ReloadProcess(ctx, l)
}
