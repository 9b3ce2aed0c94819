package host

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/graftland/graft/internal/health"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/floating"
	"github.com/graftland/graft/spec"
)

// metrics are the host's Prometheus metrics (README, "Metrics"). What the
// host's state says at any moment (up, status, restarts, roles) is read
// at scrape time by a collector; only events, which no state keeps (the
// stops and the applies), are counted as they happen.
type metrics struct {
	reg          *prometheus.Registry
	stops        *prometheus.CounterVec
	stopSeconds  *prometheus.HistogramVec
	applies      *prometheus.CounterVec
	applySeconds *prometheus.HistogramVec
}

// Apply results, the label of the apply metrics: refused when nothing
// was carried out (a bad spec, a stale plan), failed when a step failed.
const (
	applySucceeded = "succeeded"
	applyFailed    = "failed"
	applyRefused   = "refused"
)

// newMetrics makes the metrics of h, in a registry of its own (a process
// may run several hosts: tests do), with the Go runtime's and the
// process's.
func newMetrics(h *Host) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		stops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "graft_plugin_stops_total",
			Help: "Stops of a plugin by outcome: Exited, Killed (forced), RemoteTerminationUnconfirmed (docs/stopping.md).",
		}, []string{"plugin", "outcome"}),
		stopSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "graft_plugin_stop_duration_seconds",
			Help:    "How long a plugin's stops took, from asking it to stop to its end confirmed (or given up), by outcome.",
			Buckets: []float64{.01, .05, .1, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"plugin", "outcome"}),
		applies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "graft_applies_total",
			Help: "Applies (apply, restart, down, and the host's own at start and shutdown) by result: succeeded, failed (a step failed) or refused (nothing carried out).",
		}, []string{"result"}),
		applySeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "graft_apply_duration_seconds",
			Help:    "How long applies took, from taking the apply lock to their last step, by result.",
			Buckets: []float64{.01, .05, .1, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"result"}),
	}
	m.reg.MustRegister(m.stops, m.stopSeconds, m.applies, m.applySeconds, collector{h},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Gatherer is the host's metrics (README, "Metrics"), which its API
// serves in Prometheus's text format.
func (h *Host) Gatherer() prometheus.Gatherer { return h.metrics.reg }

// outcomes are the outcomes of a stop, each a series of the stop counter
// from a plugin's first start (so that rate() and alerts see a 0 before
// the first stop).
var outcomes = []runtime.Outcome{runtime.Exited, runtime.Killed, runtime.Unconfirmed}

// started makes a plugin's stop counters, at 0.
func (m *metrics) started(plugin string) {
	for _, o := range outcomes {
		m.stops.WithLabelValues(plugin, string(o))
	}
}

// stopped counts a plugin's stop.
func (m *metrics) stopped(plugin string, outcome runtime.Outcome, took time.Duration) {
	m.stops.WithLabelValues(plugin, string(outcome)).Inc()
	m.stopSeconds.WithLabelValues(plugin, string(outcome)).Observe(took.Seconds())
}

// applied counts an apply.
func (m *metrics) applied(result string, took time.Duration) {
	m.applies.WithLabelValues(result).Inc()
	m.applySeconds.WithLabelValues(result).Observe(took.Seconds())
}

// The descriptions of what collector reads from the host's state.
var (
	upDesc = prometheus.NewDesc("graft_plugin_up",
		"1 when the plugin's process runs (status running), else 0.", []string{"plugin", "placement"}, nil)
	statusDesc = prometheus.NewDesc("graft_plugin_status",
		"1 for the plugin's status (as graft status shows it), 0 for the others.", []string{"plugin", "status"}, nil)
	restartsDesc = prometheus.NewDesc("graft_plugin_restarts_total",
		"Restarts of the plugin's current instance after it exited or failed (retry); a replacement starts again at 0.", []string{"plugin"}, nil)
	exitDesc = prometheus.NewDesc("graft_plugin_last_exit_code",
		"The exit status of the plugin's last process that ended, -1 for a signal; absent until one has.", []string{"plugin"}, nil)
	roleDesc = prometheus.NewDesc("graft_floating_role",
		"1 for a floating plugin's part in its election on this host (leader, follower, candidate), 0 for the others.", []string{"plugin", "role"}, nil)
	epochDesc = prometheus.NewDesc("graft_floating_epoch",
		"The epoch of the lease of a floating plugin's leader, as this host last saw it.", []string{"plugin"}, nil)
	healthDesc = prometheus.NewDesc("graft_plugin_health",
		"For a plugin with a health check, 1 for its health (starting, healthy, unhealthy), 0 for the others; absent without one.", []string{"plugin", "health"}, nil)
	applyingDesc = prometheus.NewDesc("graft_host_applying",
		"1 while an apply holds the host's apply lock.", nil, nil)
)

// roles are the parts of a floating plugin in its election.
var roles = []floating.Role{floating.Leading, floating.Following, floating.Candidate}

// collector reads the host's state at scrape time.
type collector struct{ h *Host }

// Describe sends every description collector uses.
func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{upDesc, statusDesc, restartsDesc, exitDesc, roleDesc, epochDesc, healthDesc, applyingDesc} {
		ch <- d
	}
}

// pluginSample is what collector reads of one plugin, under the host's lock.
type pluginSample struct {
	name     string
	run      spec.Placement
	state    runtime.State
	status   plan.Status
	exit     runtime.Exit
	ended    bool // exit is of a process that ended
	epoch    int64
	hasEpoch bool
}

// Collect sends the metrics of the host's state now.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	samples, applying := c.h.sample()
	ch <- prometheus.MustNewConstMetric(applyingDesc, prometheus.GaugeValue, boolFloat(applying))
	for _, p := range samples {
		gauge := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{p.name}, labels...)...)
		}
		gauge(upDesc, boolFloat(p.status == plan.Running), string(p.run))
		for _, s := range plan.Statuses {
			gauge(statusDesc, boolFloat(p.status == s), string(s))
		}
		ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.CounterValue, float64(p.state.Restarts), p.name)
		if p.ended {
			gauge(exitDesc, float64(p.exit.Code))
		}
		if p.run.Traits().Elect {
			for _, r := range roles {
				gauge(roleDesc, boolFloat(p.state.Role == string(r)), string(r))
			}
			if p.hasEpoch {
				gauge(epochDesc, float64(p.epoch))
			}
		}
		if p.state.Health != "" {
			for _, h := range health.Statuses {
				gauge(healthDesc, boolFloat(p.state.Health == h), string(h))
			}
		}
	}
}

// sample reads the state collector reports, under the host's lock.
func (h *Host) sample() (samples []pluginSample, applying bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, e := range h.plugins {
		st := e.supervisor.State()
		p := pluginSample{name: name, run: e.record.Run, state: st, status: statusOf(st.Status)}
		// The supervisor's last exit is zero until a process ended (a
		// start that failed has none); every placement dates an end.
		p.exit = e.supervisor.LastExit()
		p.ended = !p.exit.At.IsZero()
		p.epoch, p.hasEpoch = h.epochs[name]
		samples = append(samples, p)
	}
	return samples, h.holder.who != ""
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// resultOf is an apply's result label: refused when it failed before its
// first step began.
func resultOf(err error, began bool) string {
	switch {
	case err == nil:
		return applySucceeded
	case !began:
		return applyRefused
	}
	return applyFailed
}
