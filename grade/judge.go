package grade

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
)

// ReadVerdict reads a judge's reply: a JSON object (fenced or not, as
// Extract reads answers) of the form {"scores": {"<criterion id>": 0..1,
// ...}, "reasoning": "..."}. Every criterion must be scored, none other,
// each with a number from 0 to 1. The judgement's Score is the criteria's
// weighted mean, to be compared with passAt.
func ReadVerdict(reply string, criteria []intents.Criterion, passAt float64) (*pairbench.Judgement, error) {
	obj, err := Extract(reply)
	if err != nil {
		return nil, fmt.Errorf("the judge's reply holds no verdict (a JSON object): %q", clip(reply, 120))
	}
	scores, ok := obj["scores"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf(`the judge's verdict has no "scores" object`)
	}
	j := &pairbench.Judgement{PassAt: passAt}
	var sum, weights float64
	for _, c := range criteria {
		v, ok := scores[c.ID]
		if !ok {
			return nil, fmt.Errorf("the judge did not score criterion %s", c.ID)
		}
		s, ok := pairbench.Number(v)
		if !ok || math.IsNaN(s) || s < 0 || s > 1 {
			return nil, fmt.Errorf("the judge scored criterion %s %v, not a number from 0 to 1", c.ID, v)
		}
		j.Scores = append(j.Scores, pairbench.CriterionScore{ID: c.ID, Score: s})
		sum += c.Weight * s
		weights += c.Weight
	}
	for id := range scores {
		if !slices.ContainsFunc(criteria, func(c intents.Criterion) bool { return c.ID == id }) {
			return nil, fmt.Errorf("the judge scored %q, which is not a criterion", clip(id, 40))
		}
	}
	if weights > 0 {
		j.Score = min(1, sum/weights)
	}
	if r, ok := obj["reasoning"].(string); ok {
		j.Reasoning = cutBytes(strings.TrimSpace(r), pairbench.MaxReasoning)
	}
	return j, nil
}

// JudgedGrade is the grade of a judged trial: g (an answer that passed its
// checks, schema and rules) stays correct when the judgement passes, and
// is wrong, saying by how much, when it does not.
func JudgedGrade(j *pairbench.Judgement, g Result) Result {
	if j.Passed() {
		return g
	}
	return Result{Outcome: pairbench.Wrong, Extracted: g.Extracted,
		Reason: fmt.Sprintf("judged %.3f, under pass_at %.3f", j.Score, j.PassAt)}
}

// cutBytes shortens s to at most n bytes, at a rune boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
