package server

import (
	"net/http"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/spec"
)

// servePlan answers POST /v1/plan: the plan an apply of the request's
// source would carry out now (host.Host.Plan). A large request's turn
// (guard.Done) ends once the plan is made.
func (s *server) servePlan(w http.ResponseWriter, r *http.Request) {
	var req hostapi.PlanRequest
	if !readJSON(w, r, &req) {
		return
	}
	p, err := s.h.Plan(spec.Source(req.Source))
	guard.Done(r) // parsed and planned: the answer may take its time
	if err != nil {
		writeFailure(w, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}
