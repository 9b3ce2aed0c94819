package runtime

import (
	"context"
	"sync"

	"github.com/hashicorp/go-multierror"
)

// StopAll stops hs at once, each as its Stop does, and returns their
// errors together: what a placement's Close does with what still runs.
func StopAll[H interface {
	Stop(context.Context) (Outcome, error)
}](ctx context.Context, hs []H) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs *multierror.Error
	)
	for _, h := range hs {
		wg.Go(func() {
			if _, err := h.Stop(ctx); err != nil {
				mu.Lock()
				errs = multierror.Append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errs.ErrorOrNil()
}

// Forced is a context already done: a Handle.Stop with it forces the
// plugin at once, skipping the graceful steps.
var Forced = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
