package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/graftland/graft/internal/guard"
)

// watchSettle gathers the changes of a moment into one status: an apply
// changes a plugin several times in a few milliseconds. A status is sent
// at most once a moment.
const watchSettle = 20 * time.Millisecond

// serveWatch is GET /v1/status?watch=1: the status now, then again after
// every change that shows in it, one JSON object a line, flushed as it
// comes, until the client goes or the host ends. It is driven by the
// host's changes, never by a clock: a host that changes nothing sends
// nothing. It holds one of its listener's stream slots (guard.Stream).
func (s *server) serveWatch(w http.ResponseWriter, r *http.Request) {
	release, ok := guard.Stream(w, r)
	if !ok {
		return
	}
	defer release()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	var last []byte
	for {
		next := s.h.Changes() // before the status is read, so no change is missed
		b, err := json.Marshal(s.h.Status())
		if err != nil {
			return
		}
		if !bytes.Equal(b, last) {
			if _, err := w.Write(append(b, '\n')); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			last = b
		}
		// The first change after a quiet moment is sent at once (an apply's
		// taking of the lock, which a short apply would otherwise end
		// within the moment); what follows it within watchSettle is
		// gathered into the next status.
		select {
		case <-time.After(watchSettle):
		case <-r.Context().Done():
			return
		}
		select {
		case <-next:
		case <-r.Context().Done():
			return
		case <-s.h.Ending():
			return
		}
	}
}
