package pairbench

import (
	"fmt"
	"math"
)

// Judgement is what a judge made of a trial of a judged intent: each
// criterion's score and their weighted mean. A row carries one when the
// judge was asked (the trial passed its checks, schema and rules, and
// nothing else ended it first).
type Judgement struct {
	// Scores are the criteria's scores, 0 to 1, in the intent's order.
	Scores []CriterionScore `json:"scores"`
	// Score is the weighted mean of Scores; the trial is correct when it is
	// at least PassAt.
	Score  float64 `json:"score"`
	PassAt float64 `json:"pass_at"`
	// Reasoning is the judge's own account of its scores, cut to
	// MaxReasoning bytes.
	Reasoning string `json:"reasoning,omitempty"`
	// Again is the same answer judged a second time, when the run judges
	// twice to measure the judge's agreement with itself; it never decides
	// the outcome.
	Again *Judgement `json:"again,omitempty"`
	// InputTokens, OutputTokens and CostUSD are what the judging cost (the
	// second judging's included), counted in the run's spend.
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
}

// MaxReasoning bounds Judgement.Reasoning.
const MaxReasoning = 4 << 10

// CriterionScore is one criterion's score, 0 to 1.
type CriterionScore struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

// Passed reports whether the judgement makes the trial correct.
func (j *Judgement) Passed() bool { return j.Score >= j.PassAt }

// Of returns the score of the criterion id, and false when it has none.
func (j *Judgement) Of(id string) (float64, bool) {
	for _, s := range j.Scores {
		if s.ID == id {
			return s.Score, true
		}
	}
	return 0, false
}

// validate checks that every score is in [0, 1] and the cost is not
// negative.
func (j *Judgement) validate() error {
	in01 := func(f float64) bool { return f >= 0 && f <= 1 && !math.IsNaN(f) }
	for _, s := range j.Scores {
		if !in01(s.Score) {
			return fmt.Errorf("judge: criterion %s scored %v, outside 0 to 1", s.ID, s.Score)
		}
	}
	switch {
	case !in01(j.Score) || !in01(j.PassAt):
		return fmt.Errorf("judge: score %v or pass_at %v outside 0 to 1", j.Score, j.PassAt)
	case j.CostUSD < 0:
		return fmt.Errorf("judge: negative cost")
	case j.Again != nil:
		return j.Again.validate()
	}
	return nil
}

// SpendUSD is what the trial cost the run: its agent's model calls and its
// judge's.
func (r Row) SpendUSD() float64 {
	if r.Judge == nil {
		return r.CostUSD
	}
	return r.CostUSD + r.Judge.CostUSD
}
