package service

import (
	"net/http"
	"strconv"

	"github.com/pairbench/pairbench/server"
)

// GitHubMetrics is a transport that counts the GitHub REST calls through
// it, by endpoint ("GET /repos/{owner}/{repo}/pulls/{pull_number}", see
// githubRoutes) and status, and (through InstallationTransport, which
// bot.NewAppClients and bot.NewTokenClients look for) the rate limit
// GitHub reports left for each installation.
type GitHubMetrics struct {
	Base    http.RoundTripper
	Metrics *server.Metrics
}

func (g *GitHubMetrics) RoundTrip(req *http.Request) (*http.Response, error) {
	route := githubRoute(req.Method, req.URL.Path)
	resp, err := g.Base.RoundTrip(req)
	if err != nil {
		g.Metrics.GitHubCall(route, 0)
		return resp, err
	}
	g.Metrics.GitHubCall(route, resp.StatusCode)
	return resp, nil
}

// InstallationTransport records, around rt, the rate limit GitHub reports
// left for installation id (0 for a plain token).
func (g *GitHubMetrics) InstallationTransport(id int64, rt http.RoundTripper) http.RoundTripper {
	return rateLimitWatch{rt: rt, id: id, metrics: g.Metrics}
}

type rateLimitWatch struct {
	rt      http.RoundTripper
	id      int64
	metrics *server.Metrics
}

func (w rateLimitWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.rt.RoundTrip(req)
	if err == nil {
		if n, err := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining")); err == nil {
			w.metrics.SetRateLimitRemaining(w.id, n)
		}
	}
	return resp, err
}
