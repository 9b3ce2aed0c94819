package server

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/graftland/graft/apply"
	"github.com/graftland/graft/host"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/errkind"
	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// streaming is the handler of an apply-like request: it reads a
// hostapi.ApplyRequest, checks it, runs it, and answers with its messages,
// one JSON object a line, flushed as they come. A refusal before the apply
// begins is an error answer instead. A large request's turn (guard.Done)
// ends once its spec is parsed, before the apply waits for its lock.
func (s *server) streaming(check func(*applyWire) error, run func(ctx context.Context, req host.ApplyRequest, report host.Report) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var wire applyWire
		if !readJSON(w, r, &wire) {
			return
		}
		req, err := requestOf(&wire)
		if err == nil {
			err = check(&wire)
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, hostapi.ErrorBody{Error: "bad request: " + err.Error()})
			return
		}
		// Its answer lasts as long as the apply and its wait for the
		// lock (lockWait, as long as the client likes): a stream.
		release, ok := guard.Stream(w, r)
		if !ok {
			return
		}
		defer release()
		stream(w, func(report host.Report) error {
			report.Parsed = func() { guard.Done(r) } // its large body's turn ends once its spec is parsed
			return run(r.Context(), req, report)
		})
	}
}

// applyWire is a hostapi.ApplyRequest as the host reads it: its saved
// plan decoded as the body streams, in the same pass as the rest, rather
// than kept as raw JSON and decoded again (docs/security.md, "Memory").
// The plan is read as strictly as the request itself.
type applyWire struct {
	hostapi.ApplyRequest
	Plan *plan.Plan `json:"plan,omitempty"`
}

// apply is host.Host.Apply, as streaming runs it.
func (s *server) apply(ctx context.Context, req host.ApplyRequest, report host.Report) error {
	_, err := s.h.Apply(ctx, req, report)
	return err
}

// requestOf is the host's request of the API's, checked as every
// apply-like request is (validateCommon).
func requestOf(w *applyWire) (host.ApplyRequest, error) {
	if err := validateCommon(w); err != nil {
		return host.ApplyRequest{}, err
	}
	if p := w.Plan; p != nil && p.Source != nil && p.Source.YAML == w.Source.YAML {
		// A saved plan carries its source twice, in the request and in
		// the plan: one copy is kept, not both, while the apply waits.
		p.Source.YAML = w.Source.YAML
	}
	return host.ApplyRequest{
		Source:      spec.Source(w.Source),
		Plan:        w.Plan,
		Restart:     w.Restart,
		Once:        w.Once,
		Parallelism: w.Parallelism,
		LockWait:    time.Duration(w.LockWait) * time.Millisecond,
		Holder:      w.Holder,
	}, nil
}

// stream runs run, and answers with what it reports, one message a line:
// the plan, the events of its steps, then the end with every error. An
// error before anything was reported is an error answer.
func stream(w http.ResponseWriter, run func(host.Report) error) {
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	began := false
	send := func(m hostapi.Message) {
		if !began {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
			began = true
		}
		enc.Encode(m) // a client gone is noticed through the request's context
		if flusher != nil {
			flusher.Flush()
		}
	}
	err := run(host.Report{
		Plan: func(p *plan.Plan) {
			b, _ := json.Marshal(p) // a plan always marshals
			send(hostapi.Message{Type: hostapi.MsgPlan, Plan: b})
		},
		Event: func(e apply.Event) {
			ev := eventOf(e)
			send(hostapi.Message{Type: hostapi.MsgEvent, Event: &ev})
		},
	})
	if !began {
		writeFailure(w, err)
		return
	}
	done := hostapi.Message{Type: hostapi.MsgDone}
	for _, e := range errkind.List(err) {
		done.Errors = append(done.Errors, e.Error())
		done.Failures = append(done.Failures, encode(e))
	}
	send(done)
}
