package model

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/grade"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
)

// ask sends a judge's question to the scripted model and returns its reply.
func ask(t *testing.T, url string, ji runner.JudgeInput) string {
	t.Helper()
	resp := post(t, url, map[string]any{"model": ID, "messages": []map[string]any{
		{"role": "system", "content": runner.JudgePrompt}, {"role": "user", "content": ji.Message()},
	}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out completion
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Len(t, out.Choices, 1)
	require.NotNil(t, out.Choices[0].Message.Content)
	assert.Positive(t, out.Usage.PromptTokens, "the judging is priced")
	return *out.Choices[0].Message.Content
}

// TestScriptedJudge: the scripted model answers a judge's question, for an
// intent it was not started with, with a verdict grade reads: a criterion
// scores the share of its quoted phrases the answer holds, one that quotes
// nothing scores a filled answer 1. The same answer always gets the same
// verdict.
func TestScriptedJudge(t *testing.T) {
	ts := newTestServer(t, Options{})
	criteria := []intents.Criterion{
		{ID: "cheapest", Weight: 2, Description: `Names "Dust Choir" at "$6.80".`},
		{ID: "runner_up", Weight: 1, Description: `Also names “Paper Boats”.`},
		{ID: "answered", Weight: 1, Description: "Gives an answer at all."},
	}
	in := intents.Intent{Prompt: "Suggest two poetry books.", Criteria: criteria}
	ji := runner.NewJudgeInput(&in, map[string]any{"picks": []any{"dust choir", 6.8}}, nil)
	reply := ask(t, ts.URL, ji)
	assert.Equal(t, reply, ask(t, ts.URL, ji), "deterministic")
	j, err := grade.ReadVerdict(reply, criteria, 0.5)
	require.NoError(t, err, reply)
	for id, want := range map[string]float64{"cheapest": 1, "runner_up": 0, "answered": 1} {
		got, _ := j.Of(id)
		assert.Equal(t, want, got, id)
	}
	assert.InDelta(t, 3.0/4, j.Score, 1e-12)
	assert.Contains(t, j.Reasoning, "runner_up: the answer holds 0 of 1 quoted phrases")

	ji = runner.NewJudgeInput(&in, map[string]any{"picks": nil}, nil)
	j, err = grade.ReadVerdict(ask(t, ts.URL, ji), criteria, 0.5)
	require.NoError(t, err)
	assert.Zero(t, j.Score, "an empty answer holds nothing")

	// A user message that is not a judge's question is no judging.
	_, ok := judgeQuestion([]string{`{"task": "x", "criteria": [], "answer": {}}`})
	assert.False(t, ok, "no criteria")
	_, ok = judgeQuestion([]string{strings.Replace(ji.Message(), `"task"`, `"arm": "control", "task"`, 1)})
	assert.False(t, ok, "a field a JudgeInput does not have")
}
