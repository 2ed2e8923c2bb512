package report

import (
	"math"
	"slices"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/stats"
)

// A judged intent's trials are scored by a judge from 0 to 1 (the weighted
// mean of its criteria's scores); a scored trial the judge was not asked
// about (it failed a check, its schema or rules, timed out or crashed)
// scores 0, and so does each of its criteria. The score comparison is the
// exact Wilcoxon signed-rank test on the pairs' differences d = treatment −
// control, with the Hodges–Lehmann estimate and the interval that inverts
// the test, as the speed comparison does on log time ratios (signedrank.go;
// ties and zeros the same way). It is reported beside accuracy and speed
// and feeds no label: a judged trial's pass or fail at pass_at is its
// accuracy.

// Criterion is a judged intent's criterion as planned.
type Criterion struct {
	ID     string  `json:"id"`
	Weight float64 `json:"weight"`
}

// Score is the score comparison of a judged intent over its complete
// pairs.
type Score struct {
	Pairs int `json:"pairs"`
	// Control and Treatment are the arms' mean scores.
	Control   float64 `json:"control"`
	Treatment float64 `json:"treatment"`
	// Diff is treatment's score minus control's: the Hodges–Lehmann
	// estimate and the interval at 1 − alpha that inverts the test, whose
	// two-sided p at no difference is P (P > alpha exactly when Diff holds
	// 0).
	Diff stats.ExactInterval `json:"diff"`
	P    float64             `json:"p"`
	// Criteria are the criteria's results, in the intent's order.
	Criteria []CriterionResult `json:"criteria,omitempty"`
	// Judge is the judge's agreement with itself over the answers it
	// judged twice; nil when it judged none twice.
	Judge *JudgeAgreement `json:"judge_agreement,omitempty"`
}

// CriterionResult is one criterion over an intent's complete pairs: each
// arm's mean score, how many pairs each arm scored higher on, and which
// arm won (the higher mean; "" when they are equal).
type CriterionResult struct {
	ID            string        `json:"id"`
	Weight        float64       `json:"weight"`
	Control       float64       `json:"control"`
	Treatment     float64       `json:"treatment"`
	ControlWins   int           `json:"control_wins"`
	TreatmentWins int           `json:"treatment_wins"`
	Winner        pairbench.Arm `json:"winner,omitempty"`
}

// JudgeAgreement is how well a judge agrees with itself: over Answers
// answers judged twice, how many got the same verdict (both at or above
// pass_at, or both under), and the mean absolute difference of their two
// scores.
type JudgeAgreement struct {
	Answers     int     `json:"answers"`
	SameVerdict int     `json:"same_verdict"`
	MeanAbsDiff float64 `json:"mean_abs_diff"`
}

// Rate is the share of answers with the same verdict twice (NaN without
// answers).
func (j JudgeAgreement) Rate() float64 { return float64(j.SameVerdict) / float64(j.Answers) }

// plus adds o's answers to j.
func (j *JudgeAgreement) plus(o JudgeAgreement) {
	n := j.Answers + o.Answers
	if n > 0 {
		j.MeanAbsDiff = (j.MeanAbsDiff*float64(j.Answers) + o.MeanAbsDiff*float64(o.Answers)) / float64(n)
	}
	j.Answers, j.SameVerdict = n, j.SameVerdict+o.SameVerdict
}

// judgeNote is what the statistics keep of a row's judgement.
type judgeNote struct {
	score  float64
	scores []pairbench.CriterionScore
	// twice: judged again, to againScore, with the same verdict or not.
	twice, same bool
	againScore  float64
}

func newJudgeNote(j *pairbench.Judgement) *judgeNote {
	if j == nil || j.Scores == nil {
		return nil // no judgement, or the cost of a judge that failed
	}
	n := &judgeNote{score: j.Score, scores: slices.Clone(j.Scores)}
	if a := j.Again; a != nil && a.Scores != nil {
		n.twice, n.againScore = true, a.Score
		n.same = (j.Score >= j.PassAt) == (a.Score >= j.PassAt)
	}
	return n
}

// judged returns the judgement of the arm's trial (armIndex) of p, nil when
// it was not judged.
func (p pairRef) judged(arm int) *judgeNote {
	if p.x[arm] == nil {
		return nil
	}
	return p.x[arm].judge
}

// criterion returns the score of criterion id in n (0 without a
// judgement, or when the judge did not score it).
func (n *judgeNote) criterion(id string) float64 {
	if n == nil {
		return 0
	}
	for _, s := range n.scores {
		if s.ID == id {
			return s.Score
		}
	}
	return 0
}

func (n *judgeNote) total() float64 {
	if n == nil {
		return 0
	}
	return n.score
}

// score is the score comparison of a judged intent with criteria over its
// complete pairs; nil for an intent of another class, or without complete
// pairs.
func (a *analysis) score(class pairbench.AnswerClass, criteria []Criterion, pairs []pairRef) *Score {
	if class != pairbench.AnswerJudged || len(pairs) == 0 {
		return nil
	}
	s := &Score{Pairs: len(pairs)}
	sc, st := make([]float64, len(pairs)), make([]float64, len(pairs))
	var agree JudgeAgreement
	for i, p := range pairs {
		c, t := p.judged(0), p.judged(1)
		sc[i], st[i] = c.total(), t.total()
		for _, n := range []*judgeNote{c, t} {
			if n != nil && n.twice {
				one := JudgeAgreement{Answers: 1, MeanAbsDiff: math.Abs(n.score - n.againScore)}
				if n.same {
					one.SameVerdict = 1
				}
				agree.plus(one)
			}
		}
	}
	s.Diff, s.P = stats.ScoreDiff(sc, st, a.alpha)
	s.Control, s.Treatment = stats.Mean(sc), stats.Mean(st)
	if agree.Answers > 0 {
		s.Judge = &agree
	}
	for _, cr := range criteria {
		r := CriterionResult{ID: cr.ID, Weight: cr.Weight}
		for _, p := range pairs {
			c, t := p.judged(0).criterion(cr.ID), p.judged(1).criterion(cr.ID)
			r.Control += c
			r.Treatment += t
			switch {
			case t > c:
				r.TreatmentWins++
			case c > t:
				r.ControlWins++
			}
		}
		if n := float64(len(pairs)); n > 0 {
			r.Control, r.Treatment = r.Control/n, r.Treatment/n
		}
		switch {
		case r.Treatment > r.Control:
			r.Winner = pairbench.Treatment
		case r.Control > r.Treatment:
			r.Winner = pairbench.Control
		}
		s.Criteria = append(s.Criteria, r)
	}
	return s
}

// judgeAgreement pools the intents' judge agreement; nil when no answer was
// judged twice.
func judgeAgreement(intents []Intent) *JudgeAgreement {
	var all JudgeAgreement
	for _, in := range intents {
		if in.Score != nil && in.Score.Judge != nil {
			all.plus(*in.Score.Judge)
		}
	}
	if all.Answers == 0 {
		return nil
	}
	return &all
}
