package server

import (
	"errors"
	"net/http"

	"github.com/graftland/graft/apply"
	"github.com/graftland/graft/host"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/errkind"
	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/internal/httpapi"
)

// readJSON reads exactly one JSON value into v as the body comes,
// refusing unknown fields and anything after the value; a body that fails
// gets 400, or the guard's answer when the guard cut it (over the limit,
// too slow: guard.BodyError).
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	err := httpapi.Decode(w, r, v, hostapi.MaxBody)
	var cut *guard.BodyError
	switch {
	case err == nil:
		return true
	case errors.As(err, &cut):
		cut.Write(w)
	default:
		writeError(w, http.StatusBadRequest, hostapi.ErrorBody{Error: "bad request: " + err.Error()})
	}
	return false
}

// writeJSON answers v, indented: people read the host's answers too.
func writeJSON(w http.ResponseWriter, status int, v any) { httpapi.WriteJSON(w, status, v, true) }

func writeError(w http.ResponseWriter, status int, b hostapi.ErrorBody) { writeJSON(w, status, b) }

// writeFailure answers err with its status and its body.
func writeFailure(w http.ResponseWriter, err error) { writeError(w, statusFor(err), encode(err)) }

// statusFor is the HTTP status of an answer that is err: 404 for what the
// host does not have, else its kind's (internal/errkind), else 500.
func statusFor(err error) int {
	var notFound *host.NotFoundError
	if errors.As(err, &notFound) {
		return http.StatusNotFound
	}
	if k, _ := errkind.Of(err); k != nil {
		return k.Status
	}
	return http.StatusInternalServerError
}

// encode is err as it crosses the API (hostapi.Encode), with the step it
// failed, when it is a step's.
func encode(err error) hostapi.ErrorBody {
	b := hostapi.Encode(err)
	var step *apply.StepError
	if errors.As(err, &step) {
		st := stepOf(step.Step)
		b.Step = &st
	}
	return b
}
