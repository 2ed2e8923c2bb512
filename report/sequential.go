package report

import (
	"fmt"

	"github.com/pairbench/pairbench/stats"
)

// StopKind is why a look ended a run.
type StopKind string

const (
	// StopEfficacy: the look's verdict claims a difference.
	StopEfficacy StopKind = "efficacy"
	// StopFutility: before the last look, both pooled tests' p are above
	// the look's futility bound (stats.Design.FutilityAt), or no claim can
	// be reached at a later look (stats.Design.Curtail).
	StopFutility StopKind = "futility"
	// StopComplete: the last look, every planned pair done, claiming no
	// difference in the verdict.
	StopComplete StopKind = "complete"
)

// Stop says whether a report built at look k's level (stats.Design.LookAlpha) of design d ends the
// run, and why: efficacy when its verdict claims a difference, futility
// (before the last look) when no claim can be reached at a later look
// (a design that curtails, the report built with Plan.Later), or when both
// pooled tests' p are above the look's futility bound
// (stats.Design.FutilityAt). At the last look the run always ends.
func Stop(d stats.Design, r *Report, k int) (bool, string) {
	kind, why := Decide(d, r, k)
	if kind == StopFutility {
		why = "futility, " + why
	}
	return kind != "", fmt.Sprintf("look %d of %d: %s", k+1, len(d.Looks), why)
}

// Decide is Stop with the reason's kind, "" when the run goes on to the
// next look, and the reason in words without the look's number.
func Decide(d stats.Design, r *Report, k int) (StopKind, string) {
	last := k == len(d.Looks)-1
	if r.Verdict.Claims() && !d.IsBlind(k) { // a blind look spends no α: it stops only for futility
		return StopEfficacy, fmt.Sprintf("the verdict %s was reached at level %.3g", r.Verdict, r.Alpha)
	}
	if last {
		return StopComplete, "every planned pair is done"
	}
	if d.Curtail && r.reachable != nil && !*r.reachable {
		return StopFutility, "no claim can be reached at a later look, even if every pair still to run favoured one arm as strongly as it could"
	}
	alpha := r.Alpha
	if r.Looks != nil && r.Looks.RunAlpha > 0 {
		alpha = r.Looks.RunAlpha
	}
	f := d.FutilityAt(alpha, k)
	if h := r.Headline; f > 0 && h != nil && h.Speed.P > f && h.Accuracy.P > f {
		if d.FutilityPower > 0 {
			return StopFutility, fmt.Sprintf("the pooled speed p %.2g and accuracy p %.2g are both above %.2g, where either test's conditional power under the effect the run detects with 80%% power falls below %g",
				h.Speed.P, h.Accuracy.P, f, d.FutilityPower)
		}
		return StopFutility, fmt.Sprintf("the pooled speed p %.2g and accuracy p %.2g are both above %g", h.Speed.P, h.Accuracy.P, d.Futility)
	}
	return "", ""
}

// Claims reports whether r claims any difference between the arms: its
// verdict or a label of an intent that is not a placebo.
func (r *Report) Claims() bool {
	if r.Verdict.Claims() {
		return true
	}
	for _, in := range r.Intents {
		if !in.Placebo && in.Label.Claims() {
			return true
		}
	}
	return false
}
