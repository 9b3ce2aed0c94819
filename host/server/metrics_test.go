//go:build linux

package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/guard"
)

// TestMetricsRoutes: GET /metrics answers on the socket without a token
// and on TCP only with it, in a text Prometheus's parser reads; any other
// method is refused.
func TestMetricsRoutes(t *testing.T) {
	n := serveNet(t, guard.Limits{})
	for _, tc := range []struct {
		name      string
		tcp, auth bool
	}{{"socket", false, false}, {"tcp with the token", true, true}} {
		status, body := n.raw(t, tc.tcp, tc.auth, http.MethodGet, "/metrics", "")
		require.Equal(t, http.StatusOK, status, tc.name)
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(body))
		require.NoError(t, err, tc.name)
		require.Contains(t, fams, "graft_host_applying", tc.name)
		assert.Equal(t, 0.0, fams["graft_host_applying"].GetMetric()[0].GetGauge().GetValue(), tc.name)
		assert.Contains(t, fams, "process_start_time_seconds", tc.name)
	}
	status, body := n.raw(t, true, false, http.MethodGet, "/metrics", "")
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.NotContains(t, body, "graft_")
	status, _ = n.raw(t, false, false, http.MethodPost, "/metrics", "{}", "Content-Type", "application/json")
	assert.Equal(t, http.StatusMethodNotAllowed, status)
}
