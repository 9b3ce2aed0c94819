package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/graftland/graft/host"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/guard"
)

// serveLogs answers GET /v1/logs/{plugin}?n=N&follow=1: the last n lines
// of the plugin's log and, followed, every line after, until the client
// goes or the host ends. A follow holds one of its listener's stream
// slots (guard.Stream).
func (s *server) serveLogs(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("plugin")
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n < 0 {
		n = 20
	}
	follow := r.URL.Query().Get("follow") == "1"
	if follow {
		release, ok := guard.Stream(w, r)
		if !ok {
			return
		}
		defer release()
	}
	ls, err := s.h.Follow(name, n, follow)
	if errors.Is(err, host.ErrNoLog) {
		writeError(w, http.StatusNotFound, hostapi.ErrorBody{Error: fmt.Sprintf("%s: %v", name, err)})
		return
	}
	if err != nil {
		writeFailure(w, err)
		return
	}
	defer ls.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	flusher, _ := w.(http.Flusher)
	if err := ls.WriteBacklog(w); err != nil {
		return // the client is gone, or a file could not be read: the answer ends short
	}
	live := ls.Live()
	if live == nil {
		return
	}
	if flusher != nil {
		flusher.Flush()
	}
	for {
		select {
		case l, ok := <-live:
			if !ok {
				return
			}
			fmt.Fprintln(w, l)
			if flusher != nil {
				flusher.Flush()
			}
		case <-r.Context().Done():
			return
		case <-s.h.Ending():
			// The host is ending: what was written before goes out first.
			for {
				select {
				case l, ok := <-live:
					if !ok {
						return
					}
					fmt.Fprintln(w, l)
				default:
					return
				}
			}
		}
	}
}
