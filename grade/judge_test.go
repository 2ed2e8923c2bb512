package grade

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
)

var giftCriteria = []intents.Criterion{
	{ID: "cheapest", Weight: 2, Description: "names the cheapest"},
	{ID: "runner_up", Weight: 1, Description: "names the second"},
}

func TestReadVerdict(t *testing.T) {
	j, err := ReadVerdict("Here is my verdict.\n```json\n{\"scores\": {\"cheapest\": 1, \"runner_up\": 0.5}, \"reasoning\": \" both named \"}\n```", giftCriteria, 0.8)
	require.NoError(t, err)
	assert.Equal(t, []pairbench.CriterionScore{{ID: "cheapest", Score: 1}, {ID: "runner_up", Score: 0.5}}, j.Scores)
	assert.InDelta(t, 2.5/3, j.Score, 1e-12, "the weighted mean")
	assert.Equal(t, "both named", j.Reasoning)
	assert.True(t, j.Passed())
	assert.Equal(t, Result{Outcome: pairbench.Correct}, JudgedGrade(j, Result{Outcome: pairbench.Correct}))

	j, err = ReadVerdict(`{"scores": {"cheapest": 1, "runner_up": 0}}`, giftCriteria, 0.8)
	require.NoError(t, err)
	assert.False(t, j.Passed())
	g := JudgedGrade(j, Result{Outcome: pairbench.Correct, Extracted: map[string]any{"picks": "x"}})
	assert.Equal(t, Result{Outcome: pairbench.Wrong, Reason: "judged 0.667, under pass_at 0.800", Extracted: map[string]any{"picks": "x"}}, g)

	j, err = ReadVerdict(`{"scores": {"cheapest": 1, "runner_up": 1}, "reasoning": "`+strings.Repeat("é", pairbench.MaxReasoning)+`"}`, giftCriteria, 1)
	require.NoError(t, err)
	assert.True(t, j.Passed(), "a full score passes pass_at 1")
	assert.LessOrEqual(t, len(j.Reasoning), pairbench.MaxReasoning)
	assert.True(t, strings.HasPrefix(j.Reasoning, "éé"))

	for reply, want := range map[string]string{
		"I cannot judge this.":                                      `the judge's reply holds no verdict (a JSON object): "I cannot judge this."`,
		`{"verdict": "good"}`:                                       `the judge's verdict has no "scores" object`,
		`{"scores": {"cheapest": 1}}`:                               "the judge did not score criterion runner_up",
		`{"scores": {"cheapest": 1.5, "runner_up": 0}}`:             "the judge scored criterion cheapest 1.5, not a number from 0 to 1",
		`{"scores": {"cheapest": "high", "runner_up": 0}}`:          "the judge scored criterion cheapest high, not a number from 0 to 1",
		`{"scores": {"cheapest": 1, "runner_up": 0, "style": 0.2}}`: `the judge scored "style", which is not a criterion`,
	} {
		_, err := ReadVerdict(reply, giftCriteria, 0.5)
		assert.EqualError(t, err, want, reply)
	}
}
