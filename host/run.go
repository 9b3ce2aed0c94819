package host

import (
	"context"
	"errors"
)

// Serve answers the host's API until its ctx ends or graft down (Ending),
// calling ready once it listens: host/server's Serve.
type Serve func(ctx context.Context, ready func()) error

// Run is the host's life after Open: it takes the apply lock for the
// start-up's apply of the kept spec before it listens (so no client's
// apply comes between them: one that comes waits, then applies over it),
// serves the API with serve, calls ready once it listens, applies the kept
// spec again, and serves until ctx ends or graft down; then it stops every
// plugin in order, consumers first, and releases the state dir. The host
// is not used after Run.
func (h *Host) Run(ctx context.Context, serve Serve, ready func()) error {
	reapply := h.BeginReapply()
	listening := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		served <- serve(ctx, func() { close(listening) })
	}()
	select {
	case <-listening:
		if ready != nil {
			ready()
		}
		// A background task: Shutdown cancels it (no step begins after)
		// and waits for it.
		h.background.Go(func(ctx context.Context) {
			if err := reapply(ctx); err != nil {
				h.log.Error("apply the last applied spec", "err", err)
			}
		})
	case err := <-served:
		gone, cancel := context.WithCancel(ctx)
		cancel()
		reapply(gone) // releases the apply lock, applying nothing
		h.Shutdown(context.Background())
		return err
	}
	err := <-served
	h.log.Info("stopping every plugin, consumers first")
	if serr := h.Shutdown(context.Background()); serr != nil {
		err = errors.Join(err, serr)
	}
	h.log.Info("host stopped")
	return err
}
