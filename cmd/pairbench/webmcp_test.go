package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/rundir"
)

// TestRunWebMCPNative runs the example registry with --webmcp native: the
// plan records the mode, every trial's environment says native with the
// browser's own document.modelContext, each treatment call the agent made
// is one the browser saw, and a resume with the polyfill is refused.
func TestRunWebMCPNative(t *testing.T) {
	tools := clitest.RealStack(t)
	runs := t.TempDir()
	args := []string{"run", exampleRegistry, "--example-sites", "--tools", tools, "--runs-dir", runs, "--run-id", "n1",
		"--intent", "books-cheapest-by-author", "--pairs", "2", "--looks", "1", "--slots", "2", "--seed", "5",
		"--start-delay", "0", "--time-cap", "600"}
	code, stdout, stderr := runCLI(t, append(args, "--webmcp", "native")...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "books-cheapest-by-author")

	dir := rundir.RunDir{Path: filepath.Join(runs, "n1")}
	plan, err := dir.ReadPlan()
	require.NoError(t, err)
	assert.Equal(t, pairbench.WebMCPNative, plan.WebMCP)
	calls := 0
	for _, r := range clitest.ReadRows(t, dir.File("rows.jsonl")) {
		if !r.Outcome.Scored() {
			continue
		}
		require.NotNil(t, r.WebMCPEnv, "%s pair %d", r.Arm, r.Pair)
		assert.Equal(t, pairbench.WebMCPNative, r.WebMCPEnv.Mode)
		assert.True(t, r.WebMCPEnv.PageNative)
		assert.Equal(t, []string{"--enable-blink-features=WebMCP"}, r.WebMCPEnv.Switches)
		assert.Equal(t, pairbench.WebMCPNative, r.WebMCPImpl)
		if r.Arm == pairbench.Control {
			assert.Empty(t, r.WebMCPEnv.FrameTools, "control is tool-free as the browser sees it")
			continue
		}
		assert.Equal(t, pairbench.Correct, r.Outcome, r.Reason)
		require.Len(t, r.BrowserWebMCP, len(r.WebMCP), "every call the agent made reached the browser")
		for i, inv := range r.WebMCP {
			assert.Equal(t, pairbench.BrowserCall{Tool: inv.Tool, Status: "Completed"}, r.BrowserWebMCP[i])
			calls++
		}
	}
	assert.Positive(t, calls, "treatment called the page's tools")

	code, _, stderr = runCLI(t, append(args, "--webmcp", "polyfill", "--force")...)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "run n1 is benched with --webmcp native, not polyfill")
}
