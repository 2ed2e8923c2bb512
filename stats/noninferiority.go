package stats

import (
	"math"
)

// Non-inferiority: is head (treatment) no worse than base (control) by
// more than the margins the registry declares? Two one-sided tests per
// dimension (docs/statistics.md, Non-inferiority):
//
//   - accuracy: the paired difference in the share correct, π_b − π_c,
//     against −δ; the exact unconditional test on Tango's score statistic,
//     its p the largest over the nuisance parameter on the margin;
//   - speed: the exact signed-rank test of the per-pair log time ratios
//     shifted by the margin, log(control/treatment) + log(1 + m), against 0.
//
// "not worse" needs both dimensions shown within their margins at α (an
// intersection–union test: no adjustment); "worse" needs one dimension
// shown beyond its margin, at α/(2k) over the k intents compared
// (Bonferroni over both dimensions and every intent), so that identical
// arms are called worse anywhere in a run at most at α.

// NI returns the one-sided signed-rank p values of speed non-inferiority at
// ratio r (head at most r times base's time): pNotWorse of H0 "the typical
// log(control/treatment) ≤ −log r", pWorse of H0 "≥ −log r". Ties are
// resolved least favourably to each test, as in the two-sided test.
func (s RankSample) NI(null RankNull, r float64) (pNotWorse, pWorse float64) {
	m := s.w.m()
	if m == 0 {
		return 1, 1
	}
	below, atOrBelow := s.w.count(-2 * math.Log(r))
	above, atOrAbove := m-atOrBelow, m-below
	return 1 - null.lower(above-1), null.lower(atOrAbove)
}

// niGrid is the number of intervals of the grid over the nuisance
// parameter on which the accuracy test's p is maximised, before the
// search refines the best point (niRefine golden-section steps in the
// intervals beside it); TestAccuracyNIHoldsItsLevelOnTheMargin shows the
// test holds its level at the margin with them.
const (
	niGrid   = 60
	niRefine = 24
)

// AccuracyNI returns the exact unconditional p values of accuracy
// non-inferiority at margin delta (a share, 0.05 for 5 points) for n pairs
// of which b had only treatment correct and c only control: pNotWorse of H0
// "π_b − π_c ≤ −delta" and pWorse of H0 "π_b − π_c ≥ −delta". Each is the
// largest, over the nuisance π_c on the margin π_b = π_c − delta, of the
// probability of a score statistic at least as extreme as observed
// (docs/statistics.md). With no pairs both are 1.
func AccuracyNI(b, c, n int, delta float64) (pNotWorse, pWorse float64) {
	if n <= 0 || b+c > n || b < 0 || c < 0 {
		return 1, 1
	}
	zObs := niScore(b, c, n, delta)
	const eps = 1e-9 // a statistic equal to the observed one, bar rounding
	// The tables as extreme as observed, each way, with their log
	// multinomial coefficients.
	type cell struct {
		b, c int
		lnk  float64
	}
	var up, down []cell
	lg := func(k int) float64 { v, _ := math.Lgamma(float64(k + 1)); return v }
	for bb := 0; bb <= n; bb++ {
		for cc := 0; cc+bb <= n; cc++ {
			z := niScore(bb, cc, n, delta)
			x := cell{bb, cc, lg(n) - lg(bb) - lg(cc) - lg(n-bb-cc)}
			if z >= zObs-eps {
				up = append(up, x)
			}
			if z <= zObs+eps {
				down = append(down, x)
			}
		}
	}
	prob := func(cells []cell, pc float64) float64 {
		pb, pr := pc-delta, 1-2*pc+delta
		var s float64
		for _, x := range cells {
			if l := x.lnk + xlogy(x.b, pb) + xlogy(x.c, pc) + xlogy(n-x.b-x.c, pr); !math.IsInf(l, -1) {
				s += math.Exp(l)
			}
		}
		return s
	}
	lo, hi := delta, (1+delta)/2
	sup := func(cells []cell) float64 {
		at := func(i int) float64 { return lo + (hi-lo)*float64(i)/niGrid }
		best, bi := -1.0, 0
		for i := 0; i <= niGrid; i++ {
			if p := prob(cells, at(i)); p > best {
				best, bi = p, i
			}
		}
		// Golden-section search for the maximum in the intervals beside
		// the best grid point.
		a, d := at(max(bi-1, 0)), at(min(bi+1, niGrid))
		const g = 0.6180339887498949
		x1, x2 := d-g*(d-a), a+g*(d-a)
		f1, f2 := prob(cells, x1), prob(cells, x2)
		for range niRefine {
			if f1 < f2 {
				a, x1, f1 = x1, x2, f2
				x2 = a + g*(d-a)
				f2 = prob(cells, x2)
			} else {
				d, x2, f2 = x2, x1, f1
				x1 = d - g*(d-a)
				f1 = prob(cells, x1)
			}
			best = max(best, f1, f2)
		}
		return min(best, 1)
	}
	return sup(up), sup(down)
}

// xlogy is k·log(p), 0 when k is 0 (whatever p).
func xlogy(k int, p float64) float64 {
	if k == 0 {
		return 0
	}
	if p <= 0 {
		return math.Inf(-1)
	}
	return float64(k) * math.Log(p)
}

// niScore is Tango's score statistic for π_b − π_c = −delta in n pairs with
// b and c discordant: (b − c + n·delta) / √(n(2p̃ − delta − delta²)), p̃
// the maximum-likelihood π_c on the margin.
func niScore(b, c, n int, delta float64) float64 {
	nf, bf, cf := float64(n), float64(b), float64(c)
	r := nf - bf - cf
	// The likelihood's derivative in π_c is zero where
	// 2n·p² − [(b+c)(1+δ) + 2δ(c+r)]·p + c·δ(1+δ) = 0.
	B := (bf+cf)*(1+delta) + 2*delta*(cf+r)
	disc := math.Max(B*B-8*nf*cf*delta*(1+delta), 0)
	p := (B + math.Sqrt(disc)) / (4 * nf)
	p = math.Min(math.Max(p, delta), (1+delta)/2)
	v := nf * (2*p - delta - delta*delta)
	return (bf - cf + nf*delta) / math.Sqrt(v)
}
