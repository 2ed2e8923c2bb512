package rundir

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

// TestMergeRefusesRowsOfAnotherWebMCPMode: a shard's rows that ran in
// another mode than the plan's are no trials of this run.
func TestMergeRefusesRowsOfAnotherWebMCPMode(t *testing.T) {
	plan := execPlan(map[string]int{"a": 2}, map[string]string{"a": "d"})
	plan.WebMCP = pairbench.WebMCPNative
	row := func(pair int, mode pairbench.WebMCPImpl) pairbench.Row {
		r := pairbench.Row{RunID: "r1", Intent: "a", Domain: "d", Stage: pairbench.StagePair, Pair: pair,
			Order: plan.Intents[0].Pairs[pair].Order, Arm: pairbench.Control, Attempt: 1, Outcome: pairbench.Correct}
		if mode != "" {
			r.WebMCPEnv = &pairbench.WebMCPEnv{Mode: mode}
		}
		return r
	}
	var rows []byte
	for _, r := range []pairbench.Row{row(0, pairbench.WebMCPNative), row(1, pairbench.WebMCPPolyfill)} {
		var err error
		rows, err = pairbench.AppendRow(rows, r)
		require.NoError(t, err)
	}
	_, err := checkRows(plan, map[string][]byte{RowsFile: rows})
	var se *ShardsError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, []string{"rows.jsonl row 2: a pair 1 ran with --webmcp polyfill, the plan's is native"}, se.Problems)
}
