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
	// Curtail stops the run for futility at a look before the last when
	// no claim can be reached at any later look, whatever the pairs still
	// to run (ClaimReachable): deterministic, so it spends no α and never
	// stops a run that could still claim anything.
	Curtail bool `json:"curtail,omitempty"`
	// FutilityOnly makes every look before the last one that stops the
	// run only for futility: it spends no α, as a blind look (MarkBlind),
	// and the last look decides at the whole α. A plan too small to be
	// likely to find its planning effect takes its looks so (ForPlan).
	FutilityOnly bool `json:"futility_only,omitempty"`
	// CurtailOnly marks the blind looks kept for curtailment alone, too
	// few pairs for conditional power to tell anything (FutilityAt is 0
	// there). Nil: none is.
	CurtailOnly []bool `json:"curtail_only,omitempty"`
	// LowPower, when set, is the conditional power of the futility bounds
	// of a plan whose one-look design has less than LowPowerBelow power for
	// the planning effect (LowPowerBelowOne for one intent): such a plan
	// takes futility-only looks with these bounds instead (ForPlan), at
	// LowPowerOne when it benches one intent. 0: every plan takes the
	// design as it is.
	LowPower    float64 `json:"low_power,omitempty"`
	LowPowerOne float64 `json:"low_power_one,omitempty"`
}

// DefaultLowPower and DefaultLowPowerOne are the conditional powers of the
// default design's futility bounds in a low-powered plan of two or more
// benched intents, and of one (ForPlan). One intent's accuracy test is
// seldom live on few pairs, so its futility rests on the speed test alone
// and stops more runs, effect or not: a lower γ keeps its power at the
// same saving with no effect (docs/statistics.md, Looks).
const (
	DefaultLowPower    = 0.55
	DefaultLowPowerOne = 0.5
)

// LowPowerBelow and LowPowerBelowOne are the powers for the planning
// effect under which a plan of two or more benched intents, and of one, is
// low-powered (ForPlan). Above them futility-only looks would run more
// than 0.9 of the pairs under the effect (no early stop for efficacy),
// one intent's less, as its futility stops more runs.
const (
	LowPowerBelow    = 0.55
	LowPowerBelowOne = 0.6
)

// ForPlan is the design a plan of pairs per intent over intents benched
// intents at run level alpha takes its looks by (docs/statistics.md,
// Looks): d itself, or, when d has LowPower and the plan's one-look design
// has less than LowPowerBelow power (LowPowerBelowOne for one benched
// intent) under the planning model for a speedup of PlanningSpeedup
// (VerdictPower), d with futility-only looks (every look
// before the last spends no α, so the last decides at the whole α) and
// futility bounds at conditional power LowPower (LowPowerOne for one
// benched intent, when set). The α the early looks spend and a strict
// futility bound cost a low-powered plan much of the little power it has.
func (d Design) ForPlan(intents, pairs int, alpha float64) Design {
	if d.LowPower <= 0 {
		return d
	}
	low, below := d.LowPower, LowPowerBelow
	if intents <= 1 && d.LowPowerOne > 0 {
		low, below = d.LowPowerOne, LowPowerBelowOne
	}
	d.LowPower, d.LowPowerOne = 0, 0
	if VerdictPower(intents, pairs, alpha, PlanningSpeedup) < below {
		d.FutilityOnly, d.FutilityPower = true, low
	}
	return d
}

// DefaultDesign looks after a third, two thirds and all of the pairs, and
// stops for futility when neither pooled test has a conditional power of
// 0.6 under the effect the run detects with 80% power (FutilityAt), or
// when no claim can be reached at a later look (Curtail); a low-powered
// plan takes futility-only looks with bounds at conditional power 0.55,
// 0.5 for one intent (ForPlan).
func DefaultDesign() Design {
	return Design{Looks: []float64{1.0 / 3, 2.0 / 3, 1}, FutilityPower: DefaultFutilityPower, Curtail: true, LowPower: DefaultLowPower, LowPowerOne: DefaultLowPowerOne}
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
	if k < len(d.CurtailOnly) && d.CurtailOnly[k] {
		return 0
	}
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
	if !(d.FutilityPower >= 0 && d.FutilityPower < 1) || !(d.LowPower >= 0 && d.LowPower < 1) || !(d.LowPowerOne >= 0 && d.LowPowerOne < 1) {
		return fmt.Errorf("futility power %v, low power %v and %v: want conditional powers in [0, 1)", d.FutilityPower, d.LowPower, d.LowPowerOne)
	}
	if d.Blind != nil && (len(d.Blind) != len(d.Looks) || d.Blind[len(d.Blind)-1]) {
		return fmt.Errorf("blind %v: want one mark per look, the last not blind", d.Blind)
	}
	if d.CurtailOnly != nil && (!d.Curtail || len(d.CurtailOnly) != len(d.Looks) || d.CurtailOnly[len(d.CurtailOnly)-1]) {
		return fmt.Errorf("curtail only %v: want one mark per look of a design that curtails, the last not marked", d.CurtailOnly)
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
		if !d.IsBlind(j) {
			prev = Spent(alpha, d.Looks[j])
			break
		}
	}
	return Spent(alpha, d.Looks[k]) - prev
}

// IsBlind reports whether look k is blind (MarkBlind): it spends no α and
// stops the run only for futility.
func (d Design) IsBlind(k int) bool { return k < len(d.Blind) && d.Blind[k] }

// LevelAt is the level look k's report decides the run at, pooled being
// the pairs of every benched intent the look sees: LookAlpha, except at a
// blind look of a futility-only design, which spends no α although its
// pairs might reach LookAlpha: half the smallest p any test over those
// pairs can give (MinSignP), so that no outcome makes it claim anything.
func (d Design) LevelAt(alpha float64, k, pooled int) float64 {
	a := d.LookAlpha(alpha, k)
	if d.FutilityOnly && d.IsBlind(k) {
		a = min(a, max(MinSignP(pooled)/2, math.SmallestNonzeroFloat64))
	}
	return a
}

// MarkBlind marks, from look from on, the looks before the last at which
// the run's verdict over intents benched intents cannot be reached at the
// look's level whatever the data, pairs[k] being the pairs per intent at
// look k (VerdictAttainable): whether a look is blind depends on the plan
// alone, never on the data, so the union bound over the looks that are not
// blind holds. Looks before from (passed by a top-up) keep their α spent.
// In a design of futility-only looks every look before the last is blind.
func (d *Design) MarkBlind(pairs []int, intents int, alpha float64, from int) {
	d.Blind = make([]bool, len(d.Looks))
	for k := max(0, from); k < len(d.Looks)-1; k++ {
		d.Blind[k] = d.FutilityOnly || !VerdictAttainable(intents, pairs[k], d.LookAlpha(alpha, k))
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

// Curtailment (docs/statistics.md, Looks): a look stops the run for
// futility when no claim can be reached at a later look even if every pair
// still to run favoured one arm as strongly as it could. ClaimReachable
// decides it from bounds that hold for the exact tests the later look
// runs, so it only stops a run that could claim nothing more.

// ReachIntent is one benched intent at a look, for ClaimReachable: the
// signed-rank sample of its both-correct pairs (nil without any), its
// discordant pairs (B treatment only, C control only), and More, the
// complete pairs it may still gain by the later look.
type ReachIntent struct {
	Speed *RankSample
	B, C  int
	More  int
}

// ClaimReachable reports whether a later look decided at level alpha
// could make any claim, the run's verdict or a benched intent's label,
// for some outcome of the pairs still to run: false only when no outcome
// could. With one benched intent the verdict is its label; with more, a
// pooled test is decided at α/2 at the most and the intents' family at α
// at the most (docs/statistics.md, Multiplicity), and a test is
// significant in Holm's procedure only when its own p is at most the
// family's level. For each test, the smallest p any outcome gives:
//
//   - McNemar (an intent's, or pooled over the intents): every pair still
//     to run discordant, all in one direction, the better of the two;
//   - an intent's signed-rank test: every pair still to run both correct,
//     faster than any before it in one direction, which gives the largest
//     statistic its ties allow (each such pair adds n + 1 to the number of
//     Walsh averages above 0, and a pair's adding the most it can never
//     raises p); a speed claim's p is never below this test's (SpeedClaimP);
//   - the pooled van Elteren test: its exact p is at least 2·½^s, s the
//     larger of its final positive and negative pairs, since every coin of
//     one side coming up so reaches the observed value whatever the
//     weights; s is at most the pairs of that side so far plus every pair
//     still to run. The bound says "out of reach" only when s < log₂(4/α),
//     so with at most 2·log₂(4/α) nonzero pairs in all (12 at α = 0.05),
//     few enough that the test's null distribution is computed exactly on
//     its lattice, not approximated (TestPooledBoundBindsOnlyOnTheLattice).
func ClaimReachable(intents []ReachIntent, alpha float64) bool {
	if len(intents) == 0 {
		return false
	}
	var b, c, more, pos, neg int
	for _, in := range intents {
		if bestMcNemar(in.B, in.C, in.More) <= alpha {
			return true
		}
		b, c, more = b+in.B, c+in.C, more+in.More
		if in.Speed != nil {
			p, n := in.Speed.signs()
			pos, neg = pos+p, neg+n
		}
	}
	if len(intents) > 1 {
		if bestMcNemar(b, c, more) <= alpha/2 || MinSignP(max(pos, neg)+more) <= alpha/2 {
			return true
		}
	}
	return speedReachable(intents, alpha)
}

// bestMcNemar is the smallest McNemar p of b and c with more discordant
// pairs added to one side.
func bestMcNemar(b, c, more int) float64 {
	up, _ := McNemar(b+more, c)
	down, _ := McNemar(b, c+more)
	return min(up, down)
}

// speedReachable reports whether some intent's signed-rank test reaches
// alpha when its More pairs are all both correct and beyond every pair so
// far in one direction.
func speedReachable(intents []ReachIntent, alpha float64) bool {
	byN := map[int][]ReachIntent{}
	var ns []int
	for _, in := range intents {
		n := in.More
		if in.Speed != nil {
			n += in.Speed.N()
		}
		if MinSignP(n) <= alpha { // else no outcome reaches alpha
			byN[n] = append(byN[n], in)
			ns = append(ns, n)
		}
	}
	found := false
	RankNulls(ns, func(null RankNull) {
		for _, in := range byN[null.N] {
			lo, hi, n := 0, 0, 0
			if in.Speed != nil {
				lo, hi, n = in.Speed.lo, in.Speed.hi, in.Speed.N()
			}
			m := in.More
			gain := m*n + m*(m+1)/2 // the Walsh averages the new pairs bring, all on one side of 0
			if null.pRange(lo+gain, hi+gain) <= alpha || null.pRange(lo, hi) <= alpha {
				found = true
			}
		}
	})
	return found
}

// signs counts the sample's positive and negative log ratios.
func (s RankSample) signs() (pos, neg int) {
	for _, d := range s.w.x {
		switch {
		case d > 0:
			pos++
		case d < 0:
			neg++
		}
	}
	return pos, neg
}
