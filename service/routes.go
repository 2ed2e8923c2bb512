package service

import "strings"

// githubRoutes are the REST routes the service calls, as GitHub's REST
// description writes them. A call is counted by its route, never by its
// raw path, so the metric's label values stay few.
var githubRoutes = []string{
	"/app",
	"/app/installations/{installation_id}/access_tokens",
	"/user",
	"/repos/{owner}/{repo}/pulls/{pull_number}",
	"/repos/{owner}/{repo}/pulls/{pull_number}/files",
	"/repos/{owner}/{repo}/contents/{path}",
	"/repos/{owner}/{repo}/collaborators/{username}/permission",
	"/repos/{owner}/{repo}/issues/{issue_number}/comments",
	"/repos/{owner}/{repo}/issues/comments/{comment_id}",
	"/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
	"/repos/{owner}/{repo}/issues/{issue_number}/labels",
	"/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
	"/repos/{owner}/{repo}/labels",
	"/repos/{owner}/{repo}/check-runs",
	"/repos/{owner}/{repo}/check-runs/{check_run_id}",
	"/repos/{owner}/{repo}/commits/{ref}/check-runs",
	"/repos/{owner}/{repo}/statuses/{sha}",
	"/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches",
	"/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs",
	"/repos/{owner}/{repo}/actions/runs/{run_id}/cancel",
}

// githubRoute returns "METHOD route" for a call to path, whatever API root
// it is under (GitHub Enterprise Server's /api/v3); "METHOD other" for a
// path no route matches. A route's {param} is one path segment, but a
// contents {path} is the rest of the path.
func githubRoute(method, path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, s := range segs {
		if s == "repos" || s == "app" || s == "user" {
			segs = segs[i:]
			break
		}
	}
	for _, route := range githubRoutes {
		if routeMatches(strings.Split(strings.Trim(route, "/"), "/"), segs) {
			return method + " " + route
		}
	}
	return method + " other"
}

// routeMatches reports whether the segments of a path are a route's.
func routeMatches(route, segs []string) bool {
	for i, r := range route {
		if i >= len(segs) {
			return false
		}
		if r == "{path}" {
			return true
		}
		if !strings.HasPrefix(r, "{") && r != segs[i] {
			return false
		}
	}
	return len(route) == len(segs)
}
