package runner

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckBudget(t *testing.T) {
	caps := Caps{Time: 5 * time.Minute, SpendUSD: 0.5}
	assert.NoError(t, CheckBudget(Budget{}, 100, 2, caps, 0), "no budget, no limit")
	assert.NoError(t, CheckBudget(Budget{SpendUSD: 10}, 20, 2, caps, 0))
	assert.ErrorContains(t, CheckBudget(Budget{SpendUSD: 10}, 21, 2, caps, 0), "$10.50")
	// 20 trials over 4 slots = 5 rounds of (5 + 3) minutes = 40 minutes.
	assert.NoError(t, CheckBudget(Budget{Time: 40 * time.Minute}, 20, 4, caps, 0))
	assert.ErrorContains(t, CheckBudget(Budget{Time: 39 * time.Minute}, 20, 4, caps, 0), "40m0s")
	assert.NoError(t, CheckBudget(Budget{Time: time.Minute, SpendUSD: 0.01}, 0, 1, caps, 0), "nothing left to run")
	assert.ErrorContains(t, CheckBudget(Budget{SpendUSD: 10}, 20, 2, caps, 0.01), "$0.0100 is spent already", "the smoke gate's cost counts")
}

// fakeAgent answers with a fixed result.
type fakeAgent struct {
	res  AgentResult
	err  error
	task AgentTask
}

func (f *fakeAgent) Run(_ context.Context, task AgentTask) (AgentResult, error) {
	f.task = task
	return f.res, f.err
}

func TestSmokeAgent(t *testing.T) {
	ok := AgentResult{Final: "ready", StopReason: "stop", Cost: 0.0001, Turns: 1}
	a := &fakeAgent{res: ok}
	dir := t.TempDir()
	cost, err := SmokeAgent(context.Background(), a, rundir.Model{Provider: "p", ID: "m"}, dir)
	require.NoError(t, err)
	assert.Equal(t, 0.0001, cost, "what it cost counts in the budget")
	left, _ := os.ReadDir(dir)
	assert.Empty(t, left, "its directory is gone")
	assert.Equal(t, SmokePrompt, a.task.Prompt)
	assert.Empty(t, a.task.MCPServers, "zero tools")
	assert.Empty(t, a.task.Allowlist)

	for name, tc := range map[string]struct {
		edit func(*AgentResult)
		err  error
		want string
	}{
		"agent error":  {err: errors.New("no node"), want: "no node"},
		"model failed": {edit: func(r *AgentResult) { r.StopReason, r.ErrorMessage = "error", "401 bad key" }, want: "401 bad key"},
		"no answer":    {edit: func(r *AgentResult) { r.Final = " " }, want: "no answer"},
		"declared":     {edit: func(r *AgentResult) { r.Declared = []string{"read"} }, want: "read"},
		"zero cost":    {edit: func(r *AgentResult) { r.Cost = 0 }, want: "no cost"},
		"missing cost": {edit: func(r *AgentResult) { r.CostMissing = true }, want: "no cost"},
		"cap":          {edit: func(r *AgentResult) { r.CapHit = "time" }, want: "time cap"},
	} {
		res := ok
		if tc.edit != nil {
			tc.edit(&res)
		}
		_, err := SmokeAgent(context.Background(), &fakeAgent{res: res, err: tc.err}, rundir.Model{Provider: "p", ID: "m"}, t.TempDir())
		assert.ErrorContains(t, err, tc.want, name)
	}
}
