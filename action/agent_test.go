package action

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/rundir"
)

// TestActionAgentInput runs the Action with agent: codex (the real Codex in
// the sandbox against the scripted model): run.json freezes the agent and
// the step summary's verdict names it. An unknown agent fails the step
// with pairbench's one line before anything is planned, and a value that
// is no agent name at all is refused by the Action itself.
func TestActionAgentInput(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real bench (Chromium, Codex in bubblewrap); not in -short")
	}
	b := newBench(t)
	noStore := map[string]string{"s3-bucket": "", "s3-prefix": "", "s3-endpoint": "", "s3-region": ""}
	with := func(extra map[string]string) map[string]string {
		in := b.inputs(noStore)
		for k, v := range extra {
			in[k] = v
		}
		return in
	}

	res := b.mustRun("codex", with(map[string]string{"agent": "codex", "intents": "books-cheapest-by-author", "pairs": "1", "run-id": "gh-codex"}))
	dir := filepath.Join(res.Temp, "pairbench-action", "runs", "gh-codex")
	plan, err := rundir.ReadPlan(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	assert.Equal(t, "codex", plan.Versions.AgentName)
	assert.NotEmpty(t, plan.Versions.Agent)
	assert.Contains(t, res.Summary, "agent `codex "+plan.Versions.Agent+"`", "the verdict names the agent")
	require.Equal(t, plannedTrials(t, dir), scoredTrials(t, dir), "each planned trial scored once")
	for _, r := range wholeAttempts(readRows(t, dir)) {
		assert.Equal(t, pairbench.Correct, r.Outcome, "%s %s attempt %d: %s", r.Arm, r.Order, r.Attempt, r.Reason)
	}

	bad, err := b.run("aider", with(map[string]string{"agent": "aider", "run-id": "gh-aider"}))
	require.NoError(t, err)
	assert.True(t, bad.Failed)
	assert.Contains(t, bad.Log, `::error title=pairbench::pairbench run failed (exit 2): unknown agent "aider"; want one of pi, claude-code, codex`)
	_, err = os.Stat(filepath.Join(bad.Temp, "pairbench-action", "runs", "gh-aider", "run.json"))
	assert.True(t, os.IsNotExist(err), "no plan for an unknown agent")

	hostile, err := b.run("hostile", with(map[string]string{"agent": "pi --pairs 1000", "run-id": "gh-hostile"}))
	require.NoError(t, err)
	assert.True(t, hostile.Failed)
	assert.Contains(t, hostile.Log, "input agent is not valid: want pi, claude-code or codex")
}
