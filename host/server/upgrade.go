package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/graftland/graft/host"
	"github.com/graftland/graft/hostapi"
)

// serveUpgrade answers POST /v1/upgrade: the host checks the new program
// and prepares its replacement (host.Host.Upgrade), answers with what it
// will do, then executes the new program, which ends this server with
// the rest of the process (docs/upgrade.md). If the exec fails, the host
// goes on, and says so in its log.
func (s *server) serveUpgrade(w http.ResponseWriter, r *http.Request) {
	var req hostapi.UpgradeRequest
	if !readJSON(w, r, &req) {
		return
	}
	report, run, err := s.h.Upgrade(r.Context(), host.UpgradeRequest{
		Binary: req.Binary, LockWait: time.Duration(req.LockWait) * time.Millisecond, Holder: req.Holder,
	})
	if err != nil {
		writeFailure(w, err)
		return
	}
	// The answer goes whole, with its length and the connection's end,
	// before the exec: the handler never returns.
	b, _ := json.Marshal(report)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	http.NewResponseController(w).Flush()
	run()
}
