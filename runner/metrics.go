package runner

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/graftland/graft/runnerapi"
)

// metrics are the runner's Prometheus metrics (docs/runner-api.md,
// "Metrics"): its sessions and instances are read from its status at
// scrape time; events no state keeps (leases that ran out, generations
// handed out, recorded processes recovered) are counted as they happen.
type metrics struct {
	reg         *prometheus.Registry
	expiries    prometheus.Counter
	generations prometheus.Counter
	recoveries  *prometheus.CounterVec
	damaged     prometheus.Counter
}

// Results of a recovery, the label of graft_runner_recoveries_total.
const (
	recoveredGone    = "gone"    // the recorded process was gone already
	recoveredStopped = "stopped" // the runner stopped it
)

// newMetrics makes the metrics of r, in a registry of its own, with the
// Go runtime's and the process's.
func newMetrics(r *Runner) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		expiries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "graft_runner_lease_expiries_total",
			Help: "Sessions whose lease ran out, their processes stopped.",
		}),
		generations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "graft_runner_generations_total",
			Help: "Generations handed out: starts of an instance, each with a generation of its own.",
		}),
		recoveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "graft_runner_recoveries_total",
			Help: "Processes a previous runner recorded, found at start: gone already, or stopped by this runner.",
		}, []string{"result"}),
		damaged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "graft_runner_damaged_entries_total",
			Help: "Entries of the journal found damaged at start (cut short, a bad checksum), each logged with what was found of its process.",
		}),
	}
	m.recoveries.WithLabelValues(recoveredGone)
	m.recoveries.WithLabelValues(recoveredStopped)
	m.reg.MustRegister(m.expiries, m.generations, m.recoveries, m.damaged, collector{r},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// handler serves the metrics in Prometheus's text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

var (
	sessionsDesc = prometheus.NewDesc("graft_runner_sessions",
		"Open sessions.", nil, nil)
	instancesDesc = prometheus.NewDesc("graft_runner_instances",
		"Instances with a process, by status: running, stopping, or unconfirmed (it may still run).", []string{"status"}, nil)
)

// collector reads the runner's status at scrape time.
type collector struct{ r *Runner }

// Describe sends every description collector uses.
func (collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sessionsDesc
	ch <- instancesDesc
}

// Collect sends the metrics of the runner's status now.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	st := c.r.status()
	ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(len(st.Sessions)))
	count := map[string]int{}
	for _, inst := range st.Instances {
		count[inst.Status]++
	}
	for _, s := range []string{runnerapi.StatusRunning, runnerapi.StatusStopping, runnerapi.StatusUnconfirmed} {
		ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(count[s]), s)
	}
}
