package service

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/server"
)

// metricValue reads one series of name whose labels include want.
func metricValue(t *testing.T, m *server.Metrics, name string, want map[string]string) (float64, bool) {
	t.Helper()
	families, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			if c := s.GetCounter(); c != nil {
				return c.GetValue(), true
			}
			return s.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func TestGitHubCallsAndRateLimitsAreCounted(t *testing.T) {
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "4321")
		http.Error(w, "no", http.StatusBadGateway)
	}))
	defer gh.Close()
	m := server.NewMetrics()
	g := &GitHubMetrics{Base: http.DefaultTransport, Metrics: m}
	client := &http.Client{Transport: g.InstallationTransport(77, g)}
	for range 2 {
		resp, err := client.Get(gh.URL + "/repos/o/r")
		require.NoError(t, err)
		resp.Body.Close()
	}
	n, ok := metricValue(t, m, "pairbench_github_api_calls_total", map[string]string{"operation": "GET", "code": "502"})
	assert.True(t, ok)
	assert.Equal(t, 2.0, n)
	left, ok := metricValue(t, m, "pairbench_github_rate_limit_remaining", map[string]string{"installation": "77"})
	assert.True(t, ok)
	assert.Equal(t, 4321.0, left)

	gh.Close()
	_, err := client.Get(gh.URL + "/repos/o/r")
	require.Error(t, err)
	n, ok = metricValue(t, m, "pairbench_github_api_calls_total", map[string]string{"operation": "GET", "code": "0"})
	assert.True(t, ok, "a call without an answer is counted with code 0")
	assert.Equal(t, 1.0, n)
}
