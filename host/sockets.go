package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/local"
	"github.com/graftland/graft/spec"
)

// The host holds the sockets of its local plugins' listen: (runtime/local,
// docs/semantics.md "Held sockets"). An apply binds every one the desired
// spec lists before it records the spec or stops anything, so that an
// address that cannot be bound fails the apply first; the sockets of a
// plugin that left the spec are closed once the apply is done.

// socketsFile is where the host's local placement records its sockets for
// the next program, across graft upgrade.
func socketsFile(dir string) string { return filepath.Join(dir, statedir.Sockets) }

// holdSockets binds, or keeps, the sockets of desired's local plugins,
// and has each runner do the same for its plugins'. A runner that cannot
// be reached now is left to the start, which says so; one that cannot
// bind an address fails the apply as the host does.
func (h *Host) holdSockets(ctx context.Context, desired *spec.Spec) error {
	var errs []string
	for _, name := range slices.Sorted(maps.Keys(desired.Plugins)) {
		p := desired.Plugins[name]
		if len(p.Listen) == 0 || p.Run != spec.Local && p.Run != spec.OnRunner {
			continue
		}
		req := runtime.Request{Project: desired.Name, Dir: desired.Dir}.For(p)
		if p.Run == spec.OnRunner {
			if err := h.holdRemote(ctx, desired, p, req); err != nil {
				errs = append(errs, fmt.Sprintf("%s: plugins.%s.listen: %v", desired.File, p.FileName(), err))
			}
			continue
		}
		err := h.local.HoldSockets(req, p.Listen)
		if errors.Is(err, syscall.EADDRINUSE) && h.adopted(name) {
			// A host that crashed took its sockets with it, and the
			// process adopted from it holds its own copy: bound again once
			// that process is gone.
			h.log.Warn("a socket of an adopted plugin is its process's alone until it stops", "plugin", name, "err", err)
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: plugins.%s.%v", desired.File, p.FileName(), err))
		}
	}
	if len(errs) > 0 {
		return errors.New("a socket cannot be held, and nothing was changed: " + strings.Join(errs, "; "))
	}
	return nil
}

// holdRemote has the runner of p hold its sockets: an error only when
// the runner refused them.
func (h *Host) holdRemote(ctx context.Context, desired *spec.Spec, p *spec.Plugin, req runtime.Request) error {
	pl, err := h.runners.Placement(desired, p)
	holder, ok := pl.(runtime.SocketHolder)
	if err != nil || !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, holdWait)
	defer cancel()
	err = holder.HoldSockets(ctx, req)
	if errors.As(err, new(*runtime.SocketError)) {
		return err
	}
	if err != nil {
		h.log.Warn("the runner could not be asked to hold the sockets now: its start binds them", "plugin", p.Name, "err", err)
	}
	return nil
}

// holdWait bounds the wait for a runner to hold a plugin's sockets.
const holdWait = 10 * time.Second

// pruneSockets closes the sockets of the plugins that are no local
// plugins of desired, or list none.
func (h *Host) pruneSockets(desired *spec.Spec) {
	keep := map[string]bool{}
	for _, p := range desired.Plugins {
		if p.Run == spec.Local && len(p.Listen) > 0 {
			keep[local.SocketKey(runtime.Request{Project: desired.Name, Dir: desired.Dir}.For(p))] = true
		}
	}
	h.local.KeepSockets(func(key string) bool { return keep[key] })
}

// adopted reports whether name runs as a process adopted from an earlier
// host.
func (h *Host) adopted(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.plugins[name]
	return e != nil && e.adopted != nil
}
