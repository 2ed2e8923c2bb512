package pairbench_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

// TestJudgedRowsRoundTrip: a judged row's judgement is written and read
// back whole, with its spend beside the agent's; a row from before judges
// (no "judge") still reads, with no judgement; a judgement outside 0 to 1
// is not a valid row.
func TestJudgedRowsRoundTrip(t *testing.T) {
	old := []byte(`{"v":1,"run_id":"r","intent":"i","domain":"d","stage":"pair","pair":0,"order":"AB","arm":"control","attempt":1,"trial_dir":"t","outcome":"correct","answer":{},"wall_seconds":3,"start_delay_ms":0,"turns":2,"input_tokens":10,"output_tokens":5,"cost_usd":0.5,"adopted":false}` + "\n")
	judged := pairbench.Row{V: pairbench.RowVersion, RunID: "r", Intent: "i", Domain: "d", Stage: pairbench.StagePair, Order: pairbench.BA,
		Arm: pairbench.Treatment, Attempt: 1, Outcome: pairbench.Wrong, Reason: "judged 0.500, under pass_at 0.800", CostUSD: 0.5,
		Judge: &pairbench.Judgement{Scores: []pairbench.CriterionScore{{ID: "a", Score: 1}, {ID: "b", Score: 0}}, Score: 0.5, PassAt: 0.8,
			Reasoning: "a: yes; b: no.", CostUSD: 0.25, InputTokens: 100, OutputTokens: 20,
			Again: &pairbench.Judgement{Scores: []pairbench.CriterionScore{{ID: "a", Score: 1}, {ID: "b", Score: 0.5}}, Score: 0.75, PassAt: 0.8}}}
	b, err := pairbench.AppendRow(old, judged)
	require.NoError(t, err)
	rows, partial, err := pairbench.ReadRows(bytes.NewReader(b))
	require.NoError(t, err)
	require.Zero(t, partial)
	require.Len(t, rows, 2)
	assert.Nil(t, rows[0].Judge, "a row from before judges")
	assert.NoError(t, rows[0].Validate())
	assert.Equal(t, 0.5, rows[0].SpendUSD())
	assert.Equal(t, judged, rows[1])
	assert.Equal(t, 0.75, rows[1].SpendUSD(), "the judge's cost is spent beside the agent's")
	assert.False(t, rows[1].Judge.Passed())
	s, ok := rows[1].Judge.Of("b")
	assert.True(t, ok)
	assert.Zero(t, s)

	bad := judged
	j := *judged.Judge
	j.Scores = []pairbench.CriterionScore{{ID: "a", Score: 1.5}}
	bad.Judge = &j
	assert.EqualError(t, bad.Validate(), "judge: criterion a scored 1.5, outside 0 to 1")
}
