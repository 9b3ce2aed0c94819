package host

import (
	"fmt"
	"path/filepath"

	"github.com/graftland/graft/elect/etcd"
	"github.com/graftland/graft/host/remotes"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/floating"
	"github.com/graftland/graft/runtime/local"
	"github.com/graftland/graft/runtime/worker"
	"github.com/graftland/graft/spec"
)

// hostPlacement is one placement of the host's, a row of placements: the
// run: value it takes, how it is made when the host opens, where a
// plugin of it runs, and how it is closed (what it runs stopped) when the
// host closes.
type hostPlacement struct {
	run   spec.Placement
	open  func(h *Host) error
	of    func(h *Host, desired *spec.Spec, p *spec.Plugin) (runtime.Placement, error)
	close func(h *Host) error // nil when open has not made it
	what  string              // for the log of a failed close: "stop workers"
}

// placements are the host's placements, in the order they are made; they
// close in the reverse order (floating before local, which its leaders
// run their plugins on). A new placement is a row here and its package
// under runtime/ (docs/architecture.md, "Where a change goes").
var placements = []hostPlacement{
	{run: spec.Worker, what: "stop workers",
		open: func(h *Host) (err error) {
			h.workers, err = worker.New(worker.Options{Timing: h.opt.Timing, CacheDir: filepath.Join(h.dir, wasmCacheDir)})
			return err
		},
		of:    func(h *Host, _ *spec.Spec, _ *spec.Plugin) (runtime.Placement, error) { return h.workers, nil },
		close: func(h *Host) error { return closeIf(h.workers) }},
	{run: spec.Local, what: "stop plugins",
		open: func(h *Host) error {
			h.local = local.New(local.Options{Timing: h.opt.Timing, NoNamespace: h.opt.NoNamespace, Records: filepath.Join(h.dir, instancesDir),
				Handover: h.setHandover(), AdoptWindow: h.opt.AdoptWindow, Sockets: socketsFile(h.dir)})
			return nil
		},
		of:    func(h *Host, _ *spec.Spec, _ *spec.Plugin) (runtime.Placement, error) { return h.local, nil },
		close: func(h *Host) error { return closeIf(h.local) }},
	{run: spec.OnRunner, what: "stop remote plugins",
		open: func(h *Host) error {
			h.runners = remotes.New(remotes.Options{StateDir: h.dir, HostID: h.hostID, Version: h.opt.Version, Limits: h.opt.Limits, Logger: h.log})
			return nil
		},
		of: func(h *Host, desired *spec.Spec, p *spec.Plugin) (runtime.Placement, error) {
			return h.runners.Placement(desired, p)
		},
		close: func(h *Host) error { return closeIf(h.runners) }},
	{run: spec.Floating, what: "stop floating plugins",
		// Its leader runs a plugin as a local process. The host elects on
		// etcd when a spec says so: it links the etcd client, which
		// runtime/floating does not.
		open: func(h *Host) error {
			h.floating = floating.New(h.local, floating.Options{HostID: h.hostID, Clock: h.opt.Clock, Logger: h.log, Timing: h.opt.Timing, Etcd: etcd.New})
			h.followed = make(chan struct{})
			go h.followLeaders()
			return nil
		},
		of: func(h *Host, _ *spec.Spec, _ *spec.Plugin) (runtime.Placement, error) { return h.floating, nil },
		close: func(h *Host) error {
			if h.floating == nil {
				return nil
			}
			err := h.floating.Close()
			<-h.followed
			return err
		}},
}

// closeIf closes c, unless it was never made.
func closeIf[C interface{ Close() error }](c C) error {
	var zero C
	if any(c) == any(zero) {
		return nil
	}
	return c.Close()
}

// openPlacements makes the host's placements, in order.
func (h *Host) openPlacements() error {
	for _, p := range placements {
		if err := p.open(h); err != nil {
			return err
		}
	}
	return nil
}

// closePlacements closes the host's placements in the reverse order,
// logging what fails.
func (h *Host) closePlacements() {
	for i := len(placements) - 1; i >= 0; i-- {
		if err := placements[i].close(h); err != nil {
			h.log.Error(placements[i].what, "err", err)
		}
	}
}

// placement is where plugin p of desired runs.
func (h *Host) placement(desired *spec.Spec, p *spec.Plugin) (runtime.Placement, error) {
	for _, row := range placements {
		if row.run == p.Run {
			return row.of(h, desired, p)
		}
	}
	return nil, fmt.Errorf("placement %q is not supported yet", p.Run)
}
