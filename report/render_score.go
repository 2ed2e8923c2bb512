package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/pairbench/pairbench/stats"
)

// scoreFacts are a judged intent's score comparison, its criteria and its
// judge's agreement, as details of the intent (every rendering shows them).
func scoreFacts(in *Intent) []viewFact {
	s := in.Score
	if s == nil {
		return nil
	}
	f := []viewFact{{"Score", fmt.Sprintf("judge's score (0 to 1; a trial not judged scores 0) over %d complete %s: control %s, treatment %s; treatment minus control %s (Hodges–Lehmann, exact Wilcoxon signed-rank interval, %s coverage); signed-rank p %s; feeds no label",
		s.Pairs, pluralize(s.Pairs, "pair"), showFixed(s.Control, 2), showFixed(s.Treatment, 2), showScoreDiff(s.Diff), showLevel(s.Diff.Level), showP(s.P))}}
	if len(s.Criteria) > 0 {
		parts := make([]string, 0, len(s.Criteria))
		for _, c := range s.Criteria {
			won := "even"
			if c.Winner != "" {
				won = string(c.Winner) + " won"
			}
			parts = append(parts, fmt.Sprintf("%s (weight %s): control %s, treatment %s, higher in %d and %d %s, %s",
				c.ID, showNum(c.Weight), showFixed(c.Control, 2), showFixed(c.Treatment, 2), c.ControlWins, c.TreatmentWins, pluralize(c.TreatmentWins, "pair"), won))
		}
		f = append(f, viewFact{"Criteria", strings.Join(parts, "; ")})
	}
	if j := s.Judge; j != nil {
		f = append(f, viewFact{"Judge agreement", showJudgeAgreement(*j)})
	}
	return f
}

// showJudgeAgreement is "9 of 10 answers judged twice got the same verdict
// (90%); mean score difference 0.04".
func showJudgeAgreement(j JudgeAgreement) string {
	return fmt.Sprintf("%d of %d %s judged twice got the same verdict (%s); mean score difference %s",
		j.SameVerdict, j.Answers, pluralize(j.Answers, "answer"), showPct(j.Rate()), showFixed(j.MeanAbsDiff, 2))
}

// showScoreDiff is "+0.33 [0.17, 0.67]", parentheses marking open bounds;
// or "+0.33 (too few pairs)".
func showScoreDiff(e stats.ExactInterval) string {
	if isUndef(e.Est) {
		return undefDash
	}
	est := showSignedScore(e.Est)
	if e.TooFew {
		return est + " (too few pairs)"
	}
	lo, hi := roundOut(e.Lo, 2, false), roundOut(e.Hi, 2, true)
	open, close := brackets(e, lo, hi, 0)
	return fmt.Sprintf("%s %s%s, %s%s", est, open, showSignedScore(lo), showSignedScore(hi), close)
}

// showSigned is x with two decimals and its sign ("+0.33", "−0.50", "0.00").
func showSignedScore(x float64) string {
	s := showFixed(math.Abs(x), 2)
	switch {
	case s == "0.00":
		return s
	case x > 0:
		return "+" + s
	}
	return "−" + s
}
