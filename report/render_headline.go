package report

import (
	"fmt"
	"strings"
)

// headlineView is the run-level verdict as the renderings show it, plain
// text: what the verdict rests on, whether the harness is suspect, and the
// intents that claim a difference the pooled tests do not.
type headlineView struct {
	// Pooled says how many intents were pooled ("pooled over 8 intents").
	Pooled  string
	Why     string
	Figures string
	Suspect string
	Claims  string
}

// newHeadlineView describes r's headline; the zero view without one.
func newHeadlineView(r *Report) headlineView {
	h := r.Headline
	if h == nil {
		return headlineView{}
	}
	v := headlineView{Why: h.Why, Suspect: h.Suspect}
	if h.Intents == 1 {
		v.Pooled = "one intent benched"
	} else {
		v.Pooled = fmt.Sprintf("pooled over %d intents", h.Intents)
		s, acc := h.Speed, h.Accuracy
		var parts []string
		if s.Pairs > 0 {
			parts = append(parts, fmt.Sprintf("speed, van Elteren's stratified signed-rank test: p %s over %d both-correct %s and %s in time to a correct answer over %d complete %s, decided at %s",
				showP(s.PConditional), s.Pairs, pluralize(s.Pairs, "pair"), showP(s.PComposite), s.Complete, pluralize(s.Complete, "pair"), showLevelAlpha(s.Level)))
		}
		if d := acc.TreatmentOnly + acc.ControlOnly; d > 0 {
			parts = append(parts, fmt.Sprintf("accuracy, exact McNemar on every intent's discordant pairs: treatment won %s, p %s, decided at %s",
				showShare([2]int{acc.TreatmentOnly, acc.ControlOnly}, acc.Share), showP(acc.P), showLevelAlpha(acc.Level)))
		}
		parts = append(parts, fmt.Sprintf("the intents' labels decided at %s", showLevelAlpha(h.IntentsLevel)))
		v.Figures = strings.Join(parts, "; ")
	}
	if len(h.Claims) > 0 {
		v.Claims = fmt.Sprintf("Per intent, beyond the run's verdict: %s.", showList(h.Claims, 10))
	}
	return v
}

// showLevelAlpha is a test's level as a share: "α = 1.25%".
func showLevelAlpha(x float64) string { return "α = " + showLevel(x) }

// placeboMark follows the label of a placebo intent: it tests the harness
// and is in no family and not in the verdict.
const placeboMark = "placebo"
