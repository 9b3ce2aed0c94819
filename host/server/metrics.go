package server

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/guard"
)

// metricsHandler serves the host's metrics in Prometheus's text format.
func (s *server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.h.Gatherer(), promhttp.HandlerOpts{})
}

// CheckMetricsListen checks a --metrics-listen address, tcp://HOST:PORT,
// before anything listens.
func CheckMetricsListen(addr string) error {
	hostport, ok := strings.CutPrefix(addr, "tcp://")
	if !ok {
		return fmt.Errorf("metrics listen %q: want tcp://HOST:PORT", addr)
	}
	if _, _, err := net.SplitHostPort(hostport); err != nil {
		return fmt.Errorf("metrics listen %q: %w", addr, err)
	}
	return nil
}

// listenMetrics listens on addr, tcp://HOST:PORT.
func listenMetrics(addr string) (net.Listener, error) {
	if err := CheckMetricsListen(addr); err != nil {
		return nil, err
	}
	return net.Listen("tcp", strings.TrimPrefix(addr, "tcp://"))
}

// metricsAPI is the handler of the metrics listener: GET /metrics alone,
// without a token (what it tells is names and numbers, no secret), behind
// the guard's other checks. Its answers name no version (guard.Config.Self):
// a listener without a token tells no one which release to aim at, and no
// graft client talks to it.
func (s *server) metricsAPI() http.Handler {
	serve := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			writeError(w, http.StatusNotFound, hostapi.ErrorBody{Error: fmt.Sprintf("no route %s %s: this listener serves GET /metrics", r.Method, r.URL.EscapedPath())})
			return
		}
		method(w, r, http.MethodGet, s.metricsHandler().ServeHTTP)
	}
	return guard.Handler(http.HandlerFunc(serve), guard.Config{Daemon: "host", MaxBody: 1, Limits: s.opt.Limits, Log: s.log})
}
