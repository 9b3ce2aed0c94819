//go:build linux

package runner

import (
	"io"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
)

// scrape reads the runner's GET /metrics with c's token, parsed by
// Prometheus's text parser, into the value of each series the test reads:
// name, or name{label="value"} for one label.
func (c *client) scrape() map[string]float64 {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.base+"/metrics", nil)
	require.NoError(c.t, err)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	require.Equal(c.t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(c.t, err)
	values := map[string]float64{}
	for name, fam := range fams {
		for _, m := range fam.GetMetric() {
			key := name
			for _, l := range m.GetLabel() {
				key += "{" + l.GetName() + "=\"" + l.GetValue() + "\"}"
			}
			switch fam.GetType() {
			case dto.MetricType_COUNTER:
				values[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				values[key] = m.GetGauge().GetValue()
			}
		}
	}
	return values
}

// TestMetrics: the runner's metrics, behind its token, count its sessions
// and instances, the generations it hands out and the leases that run
// out, after real starts and a lease nobody renewed.
func TestMetrics(t *testing.T) {
	h := newHarness(t, Options{Lease: 5 * time.Second, Grace: testGrace, Token: "s3cret"})

	// Without the token: 401, and no metric.
	resp, err := h.srv.Client().Get(h.srv.URL + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.NotContains(t, string(body), "graft_runner")

	m := h.scrape()
	assert.Equal(t, 0.0, m["graft_runner_sessions"])
	assert.Equal(t, 0.0, m["graft_runner_generations_total"])
	assert.Equal(t, 0.0, m[`graft_runner_recoveries_total{result="gone"}`])

	sess := h.open(testLease)
	last := h.keepAlive(sess)
	ev := h.events(sess)
	a := h.start("metrics.a", plugin(t, sess, "cooperative"))
	h.start("metrics.b", plugin(t, sess, "stubborn"))
	ev.ready(t)
	ev.ready(t)
	m = h.scrape()
	assert.Equal(t, 1.0, m["graft_runner_sessions"])
	assert.Equal(t, 2.0, m[`graft_runner_instances{status="running"}`])
	assert.Equal(t, 0.0, m[`graft_runner_instances{status="stopping"}`])
	assert.Equal(t, 2.0, m["graft_runner_generations_total"])
	assert.Equal(t, 0.0, m["graft_runner_lease_expiries_total"])
	assert.Contains(t, m, "process_cpu_seconds_total", "the process's own")

	// Nobody renews: the lease runs out, its processes are stopped.
	last()
	testsupport.WaitGone(t, testLease+testGrace+slack, a.PID)
	require.Eventually(t, func() bool {
		m = h.scrape()
		return m[`graft_runner_instances{status="running"}`] == 0 && m[`graft_runner_instances{status="stopping"}`] == 0
	}, testLease+testGrace+slack, 10*time.Millisecond)
	assert.Equal(t, 1.0, m["graft_runner_lease_expiries_total"])
	assert.Equal(t, 0.0, m["graft_runner_sessions"])
	assert.Equal(t, 2.0, m["graft_runner_generations_total"], "a counter: what was handed out stays counted")

	// A new session's start is a new generation.
	sess = h.open(0)
	h.start("metrics.a", plugin(t, sess, "cooperative"))
	assert.Equal(t, 3.0, h.scrape()["graft_runner_generations_total"])
}
