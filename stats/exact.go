// Package stats turns a run's rows into its verdict: per intent, accuracy
// and speed comparisons between the arms with exact or score-based
// intervals, a label, and run-level checks. docs/statistics.md documents
// every method and rule; the code and that document must agree.
package stats

import (
	"cmp"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// DefaultAlpha is the significance level used when a Plan leaves it unset.
const DefaultAlpha = 0.05

// Z returns the two-sided standard normal quantile for alpha: the z of a
// 1-alpha interval (1.959964 for alpha = 0.05).
func Z(alpha float64) float64 { return distuv.UnitNormal.Quantile(1 - alpha/2) }

// Wilson returns the Wilson score interval for x successes in n trials at
// normal quantile z: Est is x/n, and the bounds are
// (x + z²/2)/(n + z²) ∓ z·√(x(n−x)/n + z²/4)/(n + z²), clamped to [0, 1].
// With n = 0 nothing is known: Est is NaN and the interval is [0, 1].
func Wilson(x, n int, z float64) Interval {
	if n <= 0 {
		return Interval{Est: math.NaN(), Lo: 0, Hi: 1}
	}
	fx, fn, z2 := float64(x), float64(n), z*z
	centre := (fx + z2/2) / (fn + z2)
	half := z * math.Sqrt(fx*(fn-fx)/fn+z2/4) / (fn + z2)
	return Interval{Est: fx / fn, Lo: max(0, centre-half), Hi: min(1, centre+half)}
}

// McNemar returns the exact McNemar test on the discordant pairs b and c:
// p = min(1, 2·P(X ≤ min(b,c))) with X ~ Bin(b+c, ½), and its mid-p, which
// counts the observed table's own probability once instead of twice. Both
// are 1 when b + c = 0. The exact sign test is the same computation on the
// counts of positive and negative signs (see SignTest).
func McNemar(b, c int) (p, midP float64) {
	n := b + c
	if n <= 0 {
		return 1, 1
	}
	bin := distuv.Binomial{N: float64(n), P: 0.5}
	k := float64(min(b, c))
	cdf := bin.CDF(k)
	return min(1, 2*cdf), min(1, 2*cdf-bin.Prob(k))
}

// SignTest returns the exact two-sided sign test p for pos positive and neg
// negative differences (ties are dropped before calling): the McNemar p.
func SignTest(pos, neg int) float64 {
	p, _ := McNemar(pos, neg)
	return p
}

// Holm returns Holm's step-down adjusted p values for ps, in the order of
// ps: sorted ascending, the j-th smallest (from 1) is multiplied by
// m − j + 1, capped at 1, and made nondecreasing. Rejecting every adjusted
// p ≤ α controls the family-wise error rate at α.
func Holm(ps []float64) []float64 {
	m := len(ps)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(i, j int) int { return cmp.Compare(ps[i], ps[j]) })
	adj := make([]float64, m)
	running := 0.0
	for j, i := range idx {
		running = max(running, min(1, float64(m-j)*ps[i]))
		adj[i] = running
	}
	return adj
}

// MinSignP returns the smallest p the exact two-sided sign (or McNemar)
// test can give with n untied pairs: 2·½ⁿ, capped at 1, and 1 for n = 0.
func MinSignP(n int) float64 {
	if n <= 0 {
		return 1
	}
	return min(1, math.Ldexp(1, 1-n))
}

// RejectProb returns the exact probability that the two-sided sign test on
// n untied pairs gives p ≤ alpha when positive and negative signs are
// equally likely: the chance of a label from noise alone.
func RejectProb(n int, alpha float64) float64 {
	k := critical(n, alpha)
	if k == 0 {
		return 0
	}
	// Reject when min(pos, neg) < k; both tails have the same mass.
	bin := distuv.Binomial{N: float64(n), P: 0.5}
	return min(1, 2*bin.CDF(float64(k-1)))
}

// critical returns the number of values k = 0, 1, ... for which the sign
// test on n untied pairs with min(pos, neg) = k rejects at alpha, so the
// test rejects exactly when min(pos, neg) < critical(n, alpha). It relies
// on the p value growing with k, and is computed from SignTest itself so
// that the two can never disagree.
func critical(n int, alpha float64) int {
	lo, hi := 0, n/2+1 // SignTest(k, n-k) <= alpha holds for k < answer
	for lo < hi {
		mid := (lo + hi) / 2
		if SignTest(mid, n-mid) <= alpha {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// McNemarPower returns the exact power of the two-sided exact McNemar test
// at alpha with n pairs, when a pair is correct in treatment only with
// probability pb and in control only with probability pc: the chance that
// such a run reaches p ≤ alpha. It is what docs/statistics.md's power table
// is computed from.
func McNemarPower(n int, pb, pc, alpha float64) float64 {
	pd := pb + pc
	if n <= 0 || pd <= 0 {
		return 0
	}
	disc := distuv.Binomial{N: float64(n), P: min(1, pd)}
	q := pb / pd
	power := 0.0
	for m := 1; m <= n; m++ {
		k := critical(m, alpha) // reject when min(b, m−b) < k
		if k == 0 {
			continue
		}
		split := distuv.Binomial{N: float64(m), P: q}
		reject := split.CDF(float64(k-1)) + (1 - split.CDF(float64(m-k)))
		power += disc.Prob(float64(m)) * reject
	}
	return min(1, power)
}

// Share returns treatment's share of the discordant pairs, b/(b+c), with the
// interval that inverts the exact McNemar test at level alpha: the
// Clopper–Pearson interval for the chance q that a discordant pair favours
// treatment. It holds the q for which both binomial tails of b out of b+c
// are above alpha/2, so its bounds are open (at a bound a tail is exactly
// alpha/2 and the test rejects), except a bound at 0 or 1. No difference is
// q = ½, and McNemar's p is above alpha exactly when the interval holds ½.
// Its coverage is at least 1 − alpha for every q (Level). With fewer
// discordant pairs than the test needs to ever reject at alpha the interval
// is still returned, marked TooFew; with none it is [0, 1] and Est is NaN.
func Share(b, c int, alpha float64) ExactInterval {
	d := b + c
	iv := ExactInterval{Est: math.NaN(), Lo: 0, Hi: 1, Level: 1 - alpha, TooFew: MinSignP(d) > alpha}
	if d <= 0 {
		iv.Level = 1
		return iv
	}
	iv.Est = float64(b) / float64(d)
	if b > 0 {
		iv.Lo = distuv.Beta{Alpha: float64(b), Beta: float64(d - b + 1)}.Quantile(alpha / 2)
		iv.LoOpen = true
	}
	if b < d {
		iv.Hi = distuv.Beta{Alpha: float64(b + 1), Beta: float64(d - b)}.Quantile(1 - alpha/2)
		iv.HiOpen = true
	}
	// The quantiles are computed to within rounding; at ½ the test itself
	// decides, so the two can never disagree.
	p, _ := McNemar(b, c)
	switch inside := iv.Contains(0.5); {
	case p > alpha && !inside:
		if iv.Lo >= 0.5 {
			iv.Lo, iv.LoOpen = math.Nextafter(0.5, 0), true
		} else {
			iv.Hi, iv.HiOpen = math.Nextafter(0.5, 1), true
		}
	case p <= alpha && inside:
		if b > c {
			iv.Lo, iv.LoOpen = 0.5, true
		} else {
			iv.Hi, iv.HiOpen = 0.5, true
		}
	}
	return iv
}

// ShareCoverage returns the exact chance that Share's interval at alpha
// holds the true share q = pb/(pb+pc) for a run of n pairs in which a pair
// is correct in treatment only with chance pb and in control only with
// chance pc: the sum over every number of discordant pairs and every split
// of them. (With no discordant pair the interval is [0, 1] and holds q.)
// docs/statistics.md's coverage table is computed from it.
func ShareCoverage(n int, pb, pc, alpha float64) float64 {
	q := pb / (pb + pc)
	disc := distuv.Binomial{N: float64(n), P: min(1, pb+pc)}
	cover := 0.0
	for d := 0; d <= n; d++ {
		pd := disc.Prob(float64(d))
		if d == 0 {
			cover += pd
			continue
		}
		split := distuv.Binomial{N: float64(d), P: q}
		for b := 0; b <= d; b++ {
			if Share(b, d-b, alpha).Contains(q) {
				cover += pd * split.Prob(float64(b))
			}
		}
	}
	return cover
}

// WilsonCoverage returns the exact chance that the Wilson interval at z
// holds p for x ~ Bin(n, p).
func WilsonCoverage(n int, p, z float64) float64 {
	bin := distuv.Binomial{N: float64(n), P: p}
	cover := 0.0
	for x := 0; x <= n; x++ {
		if iv := Wilson(x, n, z); iv.Lo <= p && p <= iv.Hi {
			cover += bin.Prob(float64(x))
		}
	}
	return cover
}
