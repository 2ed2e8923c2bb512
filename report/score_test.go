package report

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/pairbench/pairbench"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// judgedRow is a trial of the judged intent "gift" whose judge scored
// cheapest and runner_up (pass_at 0.8); again, when not nil, is the score
// of a second judging with the same criteria scores scaled to it.
func judgedRow(pair int, arm pairbench.Arm, cheapest, runnerUp float64, again *float64) pairbench.Row {
	order := pairbench.AB
	if pair%2 == 1 {
		order = pairbench.BA
	}
	r := row("gift", pair, order, arm, 1, ok(60))
	j := &pairbench.Judgement{Scores: []pairbench.CriterionScore{{ID: "cheapest", Score: cheapest}, {ID: "runner_up", Score: runnerUp}},
		Score: (2*cheapest + runnerUp) / 3, PassAt: 0.8, CostUSD: 0.001}
	if j.Score < j.PassAt {
		r.Outcome = pairbench.Wrong
	}
	if again != nil {
		j.Again = &pairbench.Judgement{Scores: j.Scores, Score: *again, PassAt: 0.8}
	}
	r.Judge = j
	return r
}

var giftPlan = Plan{RunID: "t", Alpha: 0.05, Intents: []PlanIntent{{ID: "gift", Domain: "books.example", Class: pairbench.AnswerJudged, Pairs: 8,
	Criteria: []Criterion{{ID: "cheapest", Weight: 2}, {ID: "runner_up", Weight: 1}}}}}

// TestScoreOfAJudgedIntent: eight pairs where treatment names the
// runner-up and control does not (one control trial was not judged at all:
// it scores 0): the signed-rank test finds treatment's scores higher, the
// interval of the difference excludes 0, runner_up goes to treatment and
// cheapest to neither, and the answers judged twice give the agreement.
func TestScoreOfAJudgedIntent(t *testing.T) {
	var rows []pairbench.Row
	same, flipped := 0.9, 0.5
	for p := range 8 {
		c := judgedRow(p, pairbench.Control, 1, 0, nil)
		if p == 3 {
			c.Judge, c.Outcome, c.Reason = nil, pairbench.Wrong, "page check main exists failed"
		}
		tr := judgedRow(p, pairbench.Treatment, 1, 1, nil)
		switch p {
		case 0:
			tr = judgedRow(p, pairbench.Treatment, 1, 1, &same)
		case 1:
			tr = judgedRow(p, pairbench.Treatment, 1, 1, &flipped)
		}
		rows = append(rows, c, tr)
	}
	rep := Build(giftPlan, rows)
	require.Len(t, rep.Intents, 1)
	s := rep.Intents[0].Score
	require.NotNil(t, s)
	assert.Equal(t, 8, s.Pairs)
	assert.InDelta(t, (7*2.0/3)/8, s.Control, 1e-12)
	assert.Equal(t, 1.0, s.Treatment)
	// Every difference is positive: the exact two-sided p is 2/2^8.
	assert.InDelta(t, 2/math.Pow(2, 8), s.P, 1e-12)
	assert.False(t, s.Diff.Contains(0), "%+v", s.Diff)
	assert.InDelta(t, 1.0/3, s.Diff.Est, 1e-12, "the Hodges–Lehmann estimate")
	assert.InDelta(t, 0.95, s.Diff.Level, 0.03)
	require.Len(t, s.Criteria, 2)
	assert.Equal(t, CriterionResult{ID: "cheapest", Weight: 2, Control: 7.0 / 8, Treatment: 1, TreatmentWins: 1, Winner: pairbench.Treatment}, s.Criteria[0],
		"the unjudged control trial scores 0 on every criterion")
	assert.Equal(t, CriterionResult{ID: "runner_up", Weight: 1, Control: 0, Treatment: 1, TreatmentWins: 8, Winner: pairbench.Treatment}, s.Criteria[1])
	require.NotNil(t, s.Judge)
	assert.Equal(t, JudgeAgreement{Answers: 2, SameVerdict: 1, MeanAbsDiff: (0.1 + 0.5) / 2}, *s.Judge)
	assert.Equal(t, s.Judge, rep.Run.Judge, "the run's agreement pools its intents'")
	assert.InDelta(t, 16*0.01+16*0.001-0.001, rep.Run.SpendUSD, 1e-12, "the judge's spend counts")

	b, err := json.Marshal(rep)
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, s.Criteria, back.Intents[0].Score.Criteria)

	// Another class has no score; a judged intent without complete pairs neither.
	assert.Nil(t, Build(Plan{Alpha: 0.05, Intents: []PlanIntent{{ID: "x", Class: pairbench.AnswerPinned, Pairs: 2}}}, workedExample("x")).Intents[0].Score)
	assert.Nil(t, Build(giftPlan, nil).Intents[0].Score)
}

// TestScoreIsRendered: the report's Markdown (the comment) and HTML give a
// judged intent's score comparison, each criterion's winner and the judge's
// agreement, per intent and for the run.
func TestScoreIsRendered(t *testing.T) {
	again := 0.9
	var rows []pairbench.Row
	for p := range 8 {
		rows = append(rows, judgedRow(p, pairbench.Control, 1, 0, &again), judgedRow(p, pairbench.Treatment, 1, 1, &again))
	}
	rep := Build(giftPlan, rows)
	md := Markdown(rep, MarkdownOptions{})
	for _, want := range []string{
		"control 0.67, treatment 1.00; treatment minus control +0.33 [+0.33, +0.34]",
		"signed-rank p 0.0078",
		"runner\\_up (weight 1): control 0.00, treatment 1.00, higher in 0 and 8 pairs, treatment won",
		"cheapest (weight 2): control 1.00, treatment 1.00, higher in 0 and 0 pairs, even",
		"**Judge agreement:** 8 of 16 answers judged twice got the same verdict (50%); mean score difference 0.17, over every judged intent",
	} {
		assert.Contains(t, md, want)
	}
	var html strings.Builder
	require.NoError(t, WriteHTML(&html, rep, HTMLOptions{}))
	assert.Contains(t, html.String(), "treatment won")
	assert.Contains(t, html.String(), "8 of 16 answers judged twice got the same verdict (50%)")
}
