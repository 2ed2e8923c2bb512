package stats

import (
	"cmp"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// The run-level tests pool the benched intents: speed by the stratified
// signed-rank test of van Elteren (1960), one stratum per intent, and
// accuracy by the exact McNemar test on every intent's discordant pairs.
// See docs/statistics.md, The run's verdict.

// RankTest is the outcome of a signed-rank test: its two-sided p, the
// smallest p its pairs could give (all untied pairs favouring one arm),
// and whether it leans to treatment being faster.
type RankTest struct {
	P, PMin float64
	Faster  bool
	// pairs counts the pairs tested.
	pairs int
}

// exactLatticeWork bounds the exact computation of the stratified
// statistic's null distribution: the lattice's size times the number of
// pairs. Above it the Edgeworth approximation is used.
const exactLatticeWork = 4e7

// VanElteren is the stratified Wilcoxon signed-rank test over strata of
// log ratios (each intent's pairs): within each stratum the nonzero |d| are
// ranked (mid-ranks for ties) and each rank weighted by 1/(n + 1), n the
// stratum's nonzero pairs; the statistic V is the weighted sum of the
// ranks of positive d. Under no difference every sign is a fair coin given
// the |d|, so V is a weighted sum of independent fair coins: its null
// distribution is computed exactly on a lattice when that is small enough,
// and otherwise from its exact first, second and fourth cumulants by the
// normal approximation with a continuity and an Edgeworth correction. With
// one stratum of untied pairs it is the signed-rank test itself.
func VanElteren(strata [][]float64) RankTest { return vanElterenBy(strata, true) }

// vanElterenBy is VanElteren, with the exact lattice computation only when
// exact allows it (planning simulations take the approximation).
func vanElterenBy(strata [][]float64, exact bool) RankTest {
	var weights []float64 // one per nonzero pair
	var positive []bool
	var scale []int // per nonzero pair: its weight on an integer lattice
	lcm := 1
	type stratum struct {
		ranks []float64 // twice the mid-rank, an integer
		pos   []bool
		n     int
	}
	var ss []stratum
	total := 0
	for _, d := range strata {
		total += len(d)
		var nz []float64
		for _, v := range d {
			if v != 0 {
				nz = append(nz, v)
			}
		}
		if len(nz) == 0 {
			continue
		}
		slices.SortFunc(nz, func(x, y float64) int { return cmp.Compare(math.Abs(x), math.Abs(y)) })
		st := stratum{n: len(nz), ranks: make([]float64, len(nz)), pos: make([]bool, len(nz))}
		for i := 0; i < len(nz); {
			j := i
			for j < len(nz) && math.Abs(nz[j]) == math.Abs(nz[i]) {
				j++
			}
			for k := i; k < j; k++ {
				st.ranks[k] = float64(i + 1 + j) // twice the mid-rank (i+1+j)/2
				st.pos[k] = nz[k] > 0
			}
			i = j
		}
		ss = append(ss, st)
		if lcm > 0 {
			lcm = lcmBounded(lcm, st.n+1, 1<<20)
		}
	}
	out := RankTest{P: 1, PMin: 1, pairs: total}
	if len(ss) == 0 {
		return out
	}
	v, mean := 0.0, 0.0
	exact = exact && lcm > 0
	latticeSum := 0
	for _, st := range ss {
		for k := range st.ranks {
			w := st.ranks[k] / 2 / float64(st.n+1)
			weights = append(weights, w)
			positive = append(positive, st.pos[k])
			mean += w / 2
			if st.pos[k] {
				v += w
			}
			if exact {
				s := int(st.ranks[k]) * (lcm / (st.n + 1))
				scale = append(scale, s)
				latticeSum += s
			}
		}
	}
	if exact && float64(latticeSum)*float64(len(scale)) > exactLatticeWork {
		exact = false
	}
	out.Faster = v > mean
	if exact {
		vi := 0
		for k, s := range scale {
			if positive[k] {
				vi += s
			}
		}
		null := newLatticeNull(scale, latticeSum)
		out.P = null.p(vi)
		out.PMin = null.p(latticeSum)
		return out
	}
	approx := newWeightedNull(weights)
	out.P = approx.p(v)
	out.PMin = approx.p(approx.max)
	return out
}

// lcmBounded is lcm(a, b), or 0 when it exceeds limit.
func lcmBounded(a, b, limit int) int {
	g, h := a, b
	for h != 0 {
		g, h = h, g%h
	}
	l := a / g * b
	if l > limit {
		return 0
	}
	return l
}

// latticeNull is the exact null distribution of a sum of fair coins with
// integer weights.
type latticeNull struct {
	cdf []float64 // cdf[t] = P(S ≤ t)
}

func newLatticeNull(weights []int, sum int) latticeNull {
	pmf := make([]float64, sum+1)
	pmf[0] = 1
	top := 0
	for _, w := range weights {
		top += w
		for t := top; t >= w; t-- {
			pmf[t] = (pmf[t] + pmf[t-w]) / 2
		}
		for t := min(w-1, top); t >= 0; t-- {
			pmf[t] /= 2
		}
	}
	cdf := make([]float64, sum+1)
	acc := 0.0
	for t, q := range pmf {
		acc += q
		cdf[t] = acc
	}
	return latticeNull{cdf: cdf}
}

// p is the two-sided p of the value t: twice the smaller tail, at most 1.
func (n latticeNull) p(t int) float64 {
	lower := n.cdf[t]
	upper := 1.0 // P(S ≥ t) = P(S ≤ sum − t) by symmetry
	if t > 0 {
		upper = 1 - n.cdf[t-1]
	}
	return min(1, 2*min(lower, upper))
}

// weightedNull approximates the null distribution of a sum of fair coins
// with real weights from its cumulants.
type weightedNull struct {
	mean, sd, g2, cc, max float64
}

func newWeightedNull(weights []float64) weightedNull {
	var n weightedNull
	var v, k4 float64
	n.cc = math.Inf(1)
	for _, w := range weights {
		n.mean += w / 2
		v += w * w / 4
		k4 -= w * w * w * w / 8
		n.max += w
		n.cc = min(n.cc, w/2)
	}
	n.sd = math.Sqrt(v)
	n.g2 = k4 / (v * v)
	return n
}

// lower is P(S ≤ s) with a continuity correction of half the smallest
// weight.
func (n weightedNull) lower(s float64) float64 {
	z := (s + n.cc - n.mean) / n.sd
	return min(1, max(0, distuv.UnitNormal.CDF(z)-distuv.UnitNormal.Prob(z)*n.g2/24*(z*z*z-3*z)))
}

func (n weightedNull) p(s float64) float64 {
	return min(1, 2*n.lower(min(s, 2*n.mean-s)))
}

// FailedRatio stands for the log ratio of a pair in which one arm failed,
// in the composite "time to a correct answer": a failure is slower than any
// correct answer, so such a pair gets a larger |d| than any pair whose arms
// were both correct (whose |log ratio| is at most log(1e9 s / 1 ms) ≈ 27.6).
const FailedRatio = 1e3
