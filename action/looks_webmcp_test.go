package action

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench"
)

// TestActionLooksAndWebMCPInputs plans runs as a plan job would: by
// default with pairbench's looks and the polyfill, with looks 1 and webmcp
// native as asked (run.json records both), and refuses values that are not
// a number of looks or a WebMCP mode before anything is planned.
func TestActionLooksAndWebMCPInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the smoke gate in a real browser (Chromium, pi in bubblewrap); not in -short")
	}
	b := newBench(t)
	plan := func(name string, extra map[string]string) {
		t.Helper()
		in := map[string]string{"mode": "plan", "total-shards": "1", "intents": "books-count-by-author", "pairs": "30",
			"allow-inconclusive": "true", "run-id": "gh-" + name}
		for k, v := range extra {
			in[k] = v
		}
		b.mustRun(name, b.inputs(in))
	}
	plan("default", nil)
	p := storedPlan(t, b, "gh-default")
	assert.Greater(t, len(p.Looks), 1, "pairbench's default looks (a look too early to decide anything is left out)")
	assert.NotEqual(t, pairbench.WebMCPNative, p.WebMCP, "the polyfill by default")

	plan("asked", map[string]string{"looks": "1", "webmcp": "native"})
	p = storedPlan(t, b, "gh-asked")
	assert.LessOrEqual(t, len(p.Looks), 1, "one look: every pair runs")
	assert.Equal(t, pairbench.WebMCPNative, p.WebMCP)

	refusedBeforePlanning(t, b, map[string]string{"mode": "plan", "total-shards": "1", "pairs": "12"}, map[string]refusal{
		"bad-looks":  {map[string]string{"looks": "3 --pairs 1000"}, "input looks is not valid"},
		"bad-webmcp": {map[string]string{"webmcp": "native; true"}, "input webmcp is not valid"},
	})
}
