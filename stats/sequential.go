package stats

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// A group-sequential design (docs/statistics.md, Looks): the run is looked
// at after fixed fractions of its planned pairs, each look deciding the
// whole run (the graph of every claim) at its own share of α, spent by an
// O'Brien–Fleming-type function. The shares add up to α, so by the union
// bound the chance of any false claim over all looks is at most α, whatever
// the looks' correlation (conservative: exact boundaries would use it).
// Futility is non-binding: stopping for it never raises the error rate, and
// continuing past it is always allowed.

// Design is a group-sequential design: the looks as fractions of the
// planned pairs, ascending, the last 1.
type Design struct {
	Looks []float64 `json:"looks"`
	// Futility is the p above which both pooled tests must lie for a look
	// before the last to stop for futility (0: never).
	Futility float64 `json:"futility,omitempty"`
}

// DefaultDesign looks after a third, two thirds and all of the pairs, and
// stops for futility when both pooled tests' p are above 0.2.
func DefaultDesign() Design { return Design{Looks: []float64{1.0 / 3, 2.0 / 3, 1}, Futility: 0.2} }

// Check refuses a design whose looks are not ascending fractions in (0, 1]
// ending at 1, or whose futility is outside [0, 1).
func (d Design) Check() error {
	if len(d.Looks) == 0 || d.Looks[len(d.Looks)-1] != 1 {
		return fmt.Errorf("looks %v: the last look is at all the pairs (1)", d.Looks)
	}
	prev := 0.0
	for _, t := range d.Looks {
		if !(t > prev && t <= 1) {
			return fmt.Errorf("looks %v: want ascending fractions in (0, 1]", d.Looks)
		}
		prev = t
	}
	if !(d.Futility >= 0 && d.Futility < 1) {
		return fmt.Errorf("futility %v: want a p value in [0, 1)", d.Futility)
	}
	return nil
}

// Spent is the α spent by fraction t of the pairs, O'Brien–Fleming type
// (Lan and DeMets 1983): 2 − 2Φ(z₁₋α/₂ / √t); all of α at t = 1.
func Spent(alpha, t float64) float64 {
	if t >= 1 {
		return alpha
	}
	if t <= 0 {
		return 0
	}
	return 2 - 2*distuv.UnitNormal.CDF(Z(alpha)/math.Sqrt(t))
}

// LookAlpha is the level look k (from 0) decides the run at: the α spent
// between the previous look and it.
func (d Design) LookAlpha(alpha float64, k int) float64 {
	prev := 0.0
	if k > 0 {
		prev = Spent(alpha, d.Looks[k-1])
	}
	return Spent(alpha, d.Looks[k]) - prev
}

// LookPairs is the pairs per intent done at look k of a run planned with
// pairs per intent: the fraction rounded up, at least 1.
func (d Design) LookPairs(pairs, k int) int {
	return max(1, min(pairs, int(math.Ceil(d.Looks[k]*float64(pairs)-1e-9))))
}
