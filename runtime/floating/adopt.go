package floating

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/runtime"
)

// A host that replaces its program in place (graft upgrade) keeps the
// terms it leads, and their plugins' processes (docs/upgrade.md): before
// its exec it records each term (Terms); the new program adopts each
// process on the inner placement, then takes the term back with it
// (Adopt), the same epoch, before any follower could take over.

// Term is a term this host leads: its plugin, epoch, and when it last
// renewed the lease.
type Term struct {
	Plugin  string    `json:"plugin"`
	Epoch   int64     `json:"epoch"`
	Renewed time.Time `json:"renewed"`
	// Handover is what else the backend needs to take it back
	// (elect.Resumer).
	Handover string `json:"handover,omitempty"`
	// Recorded is when the old program recorded it, just before its exec:
	// from then on, the handover.
	Recorded time.Time `json:"recorded,omitzero"`
}

// Terms are the terms this host leads now.
func (p *Placement) Terms() []Term {
	p.mu.Lock()
	hs := make([]*handle, 0, len(p.handles))
	for _, h := range p.handles {
		hs = append(hs, h)
	}
	p.mu.Unlock()
	var out []Term
	for _, h := range hs {
		h.mu.Lock()
		if h.term != nil {
			out = append(out, Term{Plugin: h.req.Plugin.Name, Epoch: h.term.Epoch(), Renewed: h.term.Renewed(), Handover: h.term.Handover()})
		}
		h.mu.Unlock()
	}
	return out
}

// InnerRequest is the request of req's plugin process on the inner
// placement while this host leads with epoch: what the process that an
// earlier program started was started with, for the inner placement to
// adopt it.
func (p *Placement) InnerRequest(req runtime.Request, epoch int64) runtime.Request {
	return (&handle{p: p, req: req}).inner(epoch)
}

// Adopt takes back the term of req's plugin that this host led before
// an exec, t, and makes its handle, leading, with inner, the process
// that runs the plugin, adopted on the inner placement. A term that
// cannot be taken back (elect.ErrNotResumable; an election on etcd,
// whose lease expired meanwhile) is an error, having written nothing:
// the caller stops inner, and the plugin campaigns as at any start.
func (p *Placement) Adopt(ctx context.Context, req runtime.Request, t Term, inner runtime.Handle, since time.Time) (runtime.Handle, error) {
	pl := req.Plugin
	if pl.Elect == nil {
		return nil, fmt.Errorf("adopt %s: a floating plugin needs elect", pl.Name)
	}
	if got := inner.Identity().Generation; got != t.Epoch {
		return nil, fmt.Errorf("adopt %s: its process runs epoch %d, not the term's %d", pl.Name, got, t.Epoch)
	}
	addr, err := publishAddress(pl.Elect)
	if err != nil {
		return nil, fmt.Errorf("adopt %s: %w", pl.Name, err)
	}
	el, err := p.backend(req, addr)
	if err != nil {
		return nil, fmt.Errorf("adopt %s: join the election: %w", pl.Name, err)
	}
	r, ok := el.(elect.Resumer)
	if !ok {
		el.Close()
		return nil, fmt.Errorf("adopt %s: %w: its election cannot take a term back", pl.Name, elect.ErrNotResumable)
	}
	term, err := r.Resume(ctx, t.Epoch, t.Renewed, t.Handover)
	if err != nil {
		el.Close()
		return nil, fmt.Errorf("adopt %s: %w", pl.Name, err)
	}
	h := newHandle(p, req, el, addr)
	h.resume = &resumed{term: term, inner: inner, since: since}
	if !p.track(h) {
		term.Close()
		el.Close()
		return nil, fmt.Errorf("adopt %s: %w", pl.Name, errClosed)
	}
	h.join()
	select {
	case <-h.known:
	case <-h.ended:
		return nil, errors.Join(fmt.Errorf("adopt %s", pl.Name), h.why)
	case <-ctx.Done():
		h.Stop(ctx)
		return nil, ctx.Err()
	}
	p.log.Info("took back the lead after an exec", "plugin", pl.Name, "epoch", t.Epoch,
		"handover", time.Since(t.Recorded), "unrenewed", time.Since(t.Renewed))
	return h, nil
}
