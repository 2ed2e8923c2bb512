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
		resp, err := client.Get(gh.URL + "/repos/o/r/pulls/7")
		require.NoError(t, err)
		resp.Body.Close()
	}
	n, ok := metricValue(t, m, "pairbench_github_api_calls_total", map[string]string{"operation": "GET /repos/{owner}/{repo}/pulls/{pull_number}", "code": "502"})
	assert.True(t, ok)
	assert.Equal(t, 2.0, n)
	left, ok := metricValue(t, m, "pairbench_github_rate_limit_remaining", map[string]string{"installation": "77"})
	assert.True(t, ok)
	assert.Equal(t, 4321.0, left)

	gh.Close()
	_, err := client.Get(gh.URL + "/api/v3/repos/o/r/contents/a/b/c.yaml")
	require.Error(t, err)
	n, ok = metricValue(t, m, "pairbench_github_api_calls_total", map[string]string{"operation": "GET /repos/{owner}/{repo}/contents/{path}", "code": "0"})
	assert.True(t, ok, "a call without an answer is counted with code 0")
	assert.Equal(t, 1.0, n)
}

// TestGitHubRoutes: a call is named by its route template, under any API
// root, never by its raw path.
func TestGitHubRoutes(t *testing.T) {
	for path, want := range map[string]string{
		"/repos/o/r/pulls/2":                                   "GET /repos/{owner}/{repo}/pulls/{pull_number}",
		"/repos/o/r/pulls/2/files":                             "GET /repos/{owner}/{repo}/pulls/{pull_number}/files",
		"/api/v3/repos/o/r/contents/bench/intents/x/repos.yml": "GET /repos/{owner}/{repo}/contents/{path}",
		"/repos/o/r/issues/comments/99":                        "GET /repos/{owner}/{repo}/issues/comments/{comment_id}",
		"/repos/o/r/issues/2/labels/bench: better":             "GET /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
		"/repos/o/r/commits/abc/check-runs":                    "GET /repos/{owner}/{repo}/commits/{ref}/check-runs",
		"/app/installations/1/access_tokens":                   "GET /app/installations/{installation_id}/access_tokens",
		"/app":                                                 "GET /app",
		"/repos/o/r/git/trees/abc":                             "GET other",
		"/":                                                    "GET other",
	} {
		assert.Equal(t, want, githubRoute("GET", path), path)
	}
}
