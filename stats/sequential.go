package stats

import (
	"fmt"
	"math"
	"slices"

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
	// before the last to stop for futility (0: never), the same at every
	// look; FutilityPower, when set, replaces it with a bound for each
	// look from conditional power (FutilityAt).
	Futility      float64 `json:"futility,omitempty"`
	FutilityPower float64 `json:"futility_power,omitempty"`
	// Blind marks the looks at which the run's verdict cannot be reached
	// at their level whatever the data (MarkBlind): they can stop the run
	// only for futility, spend no α, and the next look spends from the
	// last look that is not blind. Nil: none is.
	Blind []bool `json:"blind,omitempty"`
}

// DefaultDesign looks after a third, two thirds and all of the pairs, and
// stops for futility when neither pooled test has a conditional power of
// 0.6 under the effect the run detects with 80% power (FutilityAt).
func DefaultDesign() Design {
	return Design{Looks: []float64{1.0 / 3, 2.0 / 3, 1}, FutilityPower: DefaultFutilityPower}
}

// DefaultFutilityPower is the default design's conditional power below
// which a look stops for futility.
const DefaultFutilityPower = 0.6

// futilityEffectPower is the power under which the effect conditional
// power assumes is defined: the effect the run's last look detects with
// 80% power, as the plan states it (CheckPlan).
const futilityEffectPower = 0.8

// FutilityAt is the p above which both pooled tests' p must lie for look k
// (from 0, before the last) of a run at level alpha to stop for futility:
// Futility, or from FutilityPower γ, the p at which a test's conditional
// power falls to γ (docs/statistics.md, Looks). On the Brownian-motion
// scale of a test's z, with t the look's fraction of the pairs, c the
// last look's critical value (z₁₋α_K/2) and θ = c + z₀.₈ the drift of the
// effect the last look detects with 80% power, a look at z has
// conditional power 1 − Φ((c − z√t − θ(1 − t)) / √(1 − t)), which is below
// γ when |z| is below
//
//	a = (c·t − z₀.₈(1 − t) − z₁₋γ·√(1 − t)) / √t,
//
// so the bound is the two-sided p of a, 2 − 2Φ(a): 1 (never stop) when a
// ≤ 0.
func (d Design) FutilityAt(alpha float64, k int) float64 {
	if d.FutilityPower <= 0 {
		return d.Futility
	}
	K := len(d.Looks) - 1
	if k >= K {
		return 0
	}
	t := d.Looks[k]
	c := Z(d.LookAlpha(alpha, K))
	z80 := distuv.UnitNormal.Quantile(futilityEffectPower)
	zg := distuv.UnitNormal.Quantile(1 - d.FutilityPower)
	a := (c*t - z80*(1-t) - zg*math.Sqrt(1-t)) / math.Sqrt(t)
	if a <= 0 {
		return 1
	}
	return 2 - 2*distuv.UnitNormal.CDF(a)
}

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
	if !(d.FutilityPower >= 0 && d.FutilityPower < 1) {
		return fmt.Errorf("futility power %v: want a conditional power in [0, 1)", d.FutilityPower)
	}
	if d.Blind != nil && (len(d.Blind) != len(d.Looks) || d.Blind[len(d.Blind)-1]) {
		return fmt.Errorf("blind %v: want one mark per look, the last not blind", d.Blind)
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
// between the last earlier look that is not blind and it. A blind look
// spends nothing, so the levels of the looks that are not blind add up to
// α; a blind look's own level is the one it was found blind at, which its
// verdict cannot reach.
func (d Design) LookAlpha(alpha float64, k int) float64 {
	prev := 0.0
	for j := k - 1; j >= 0; j-- {
		if !d.blind(j) {
			prev = Spent(alpha, d.Looks[j])
			break
		}
	}
	return Spent(alpha, d.Looks[k]) - prev
}

func (d Design) blind(k int) bool { return k < len(d.Blind) && d.Blind[k] }

// MarkBlind marks, from look from on, the looks before the last at which
// the run's verdict over intents benched intents cannot be reached at the
// look's level whatever the data, pairs[k] being the pairs per intent at
// look k (VerdictAttainable): whether a look is blind depends on the plan
// alone, never on the data, so the union bound over the looks that are not
// blind holds. Looks before from (passed by a top-up) keep their α spent.
func (d *Design) MarkBlind(pairs []int, intents int, alpha float64, from int) {
	d.Blind = make([]bool, len(d.Looks))
	for k := max(0, from); k < len(d.Looks)-1; k++ {
		d.Blind[k] = !VerdictAttainable(intents, pairs[k], d.LookAlpha(alpha, k))
	}
	if !slices.Contains(d.Blind, true) {
		d.Blind = nil
	}
}

// LookPairs is the pairs per intent done at look k of a run planned with
// pairs per intent: the fraction rounded up, at least 1.
func (d Design) LookPairs(pairs, k int) int {
	return max(1, min(pairs, int(math.Ceil(d.Looks[k]*float64(pairs)-1e-9))))
}
