package stats

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// The speed comparison is the Wilcoxon signed-rank test on the pairs' log
// time ratios d = log(control/treatment), with the Hodges–Lehmann estimate
// and the interval that inverts the test. Everything rests on the Walsh
// averages (d_i + d_j)/2, i ≤ j, of which there are M = n(n+1)/2: the
// signed-rank statistic of d − δ is the number of Walsh averages above δ
// (when nothing ties), the estimate is their median, and the interval runs
// between two of their order statistics.
//
// Ties (pairs with equal times, or |d_i − δ| = |d_j − δ|) are resolved the
// way least favourable to rejecting: the statistic may be anything from
// #{W > δ} to #{W ≥ δ}, and the p value is the largest over that range.
// Every fixed way of breaking the ties (with a fair coin for the sign of a
// zero) gives a statistic with the untied null distribution, so this p is
// never below a valid p and the test stays exact (conservative only when
// something ties). It also makes the set of δ the test accepts exactly the
// closed interval [W₍c₎, W₍M−c+1₎], whatever ties: interval and test are one
// computation.

// exactRankMax is the largest number of pairs for which the signed-rank
// null distribution is computed exactly; above it the normal approximation
// with a continuity and an Edgeworth (kurtosis) correction is used, whose
// error in P(T ≤ t) is below 2e-8 at 1,000 pairs and shrinks as 1/n².
const exactRankMax = 1000

// RankNull is the null distribution of the signed-rank statistic T for n
// untied pairs: T = Σ i·Bᵢ over i = 1..n with Bᵢ fair coins.
type RankNull struct {
	N int
	// cdf[t] = P(T ≤ t) for t ≤ M/2 (exact), or nil for the approximation.
	cdf []float64
}

// m is the number of Walsh averages, the largest value of T.
func (d RankNull) m() int { return d.N * (d.N + 1) / 2 }

// lower returns P(T ≤ t).
func (d RankNull) lower(t int) float64 {
	m := d.m()
	switch {
	case t < 0:
		return 0
	case t >= m:
		return 1
	case 2*t > m: // by symmetry, P(T ≤ t) = 1 − P(T ≤ M − t − 1)
		return 1 - d.lower(m-t-1)
	case d.cdf != nil:
		return d.cdf[t]
	}
	n := float64(d.N)
	mu := n * (n + 1) / 4
	v := n * (n + 1) * (2*n + 1) / 24
	// Fourth cumulant: each i·Bᵢ contributes −i⁴/8.
	k4 := -n * (n + 1) * (2*n + 1) * (3*n*n + 3*n - 1) / 30 / 8
	z := (float64(t) + 0.5 - mu) / math.Sqrt(v)
	g2 := k4 / (v * v)
	return distuv.UnitNormal.CDF(z) - distuv.UnitNormal.Prob(z)*g2/24*(z*z*z-3*z)
}

// p returns the two-sided p of the statistic value t:
// min(1, 2·P(T ≤ min(t, M − t))).
func (d RankNull) p(t int) float64 {
	return min(1, 2*d.lower(min(t, d.m()-t)))
}

// pRange returns the largest p over statistic values lo..hi: that of the
// value nearest the middle.
func (d RankNull) pRange(lo, hi int) float64 {
	m := d.m()
	switch {
	case 2*hi < m:
		return d.p(hi)
	case 2*lo > m:
		return d.p(lo)
	}
	return d.p(m / 2)
}

// Critical returns c, the number of statistic values 0, 1, … in each tail
// that the test rejects at level alpha (p ≤ alpha): it rejects exactly when
// T < c or T > M − c. 0 means no value can be rejected.
func (d RankNull) Critical(alpha float64) int {
	lo, hi := 0, d.m()/2+1 // p(t) ≤ alpha holds for t < answer
	for lo < hi {
		mid := (lo + hi) / 2
		if d.p(mid) <= alpha {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// RankNulls calls fn with the null distribution of every n in ns, in
// increasing order of n (each once). The exact distributions come from one
// pass of the recurrence P_n(t) = (P_{n−1}(t) + P_{n−1}(t − n))/2 up to the
// largest n needed (at most exactRankMax), so many intents cost no more
// than the largest. The distribution passed to fn is valid during the call
// only.
func RankNulls(ns []int, fn func(RankNull)) {
	ns = slices.Clone(ns)
	slices.Sort(ns)
	ns = slices.Compact(ns)
	var pmf, cdf []float64
	built := 0
	for _, n := range ns {
		if n < 0 {
			continue
		}
		if n > exactRankMax {
			fn(RankNull{N: n})
			continue
		}
		half := n * (n + 1) / 4
		if pmf == nil {
			top := ns[len(ns)-1]
			if top > exactRankMax {
				i, _ := slices.BinarySearch(ns, exactRankMax+1)
				top = ns[i-1]
			}
			pmf = make([]float64, top*(top+1)/4+1)
			cdf = make([]float64, len(pmf))
			pmf[0] = 1
		}
		for built < n {
			built++
			k := built
			for t := min(len(pmf)-1, built*(built+1)/2); t >= k; t-- {
				pmf[t] = (pmf[t] + pmf[t-k]) / 2
			}
			for t := min(k-1, len(pmf)-1); t >= 0; t-- {
				pmf[t] /= 2
			}
		}
		sum := 0.0
		for t := 0; t <= half; t++ {
			sum += pmf[t]
			cdf[t] = sum
		}
		fn(RankNull{N: n, cdf: cdf[:half+1]})
	}
}

// NullFor returns the null distribution for n pairs, for one-off use.
func NullFor(n int) RankNull {
	var out RankNull
	RankNulls([]int{n}, func(d RankNull) {
		out = RankNull{N: d.N, cdf: slices.Clone(d.cdf)}
	})
	return out
}

// walsh holds a sample's sorted values, from which the Walsh averages are
// counted and selected without listing all M of them.
type walsh struct {
	x []float64 // ascending
}

// newWalsh sorts a copy of d.
func newWalsh(d []float64) walsh {
	x := slices.Clone(d)
	slices.Sort(x)
	return walsh{x: x}
}

// m is the number of Walsh averages.
func (w walsh) m() int { n := len(w.x); return n * (n + 1) / 2 }

// count returns how many Walsh averages are below v and how many are at or
// below it, comparing the sums x_i + x_j with 2v (so that the comparisons are
// the ones the selection makes).
func (w walsh) count(sum float64) (below, atOrBelow int) {
	return w.countRows(sum, nil, nil)
}

// countRows is count that also keeps, when firstAt and firstAbove are not
// nil, each row i's first column whose sum reaches sum and passes it.
func (w walsh) countRows(sum float64, firstAt, firstAbove []int) (below, atOrBelow int) {
	x, n := w.x, len(w.x)
	// For row i the sums x_i + x_j, j ≥ i, increase with j; the first j
	// whose sum reaches the threshold only moves left as i grows.
	jl, je := n, n
	for i := range n {
		for jl > i && x[i]+x[jl-1] >= sum {
			jl--
		}
		for je > i && x[i]+x[je-1] > sum {
			je--
		}
		at, above := max(jl, i), max(je, i)
		below += at - i
		atOrBelow += above - i
		if firstAt != nil {
			firstAt[i], firstAbove[i] = at, above
		}
	}
	return below, atOrBelow
}

// sumAt returns the k-th smallest (from 1) of the sums x_i + x_j, i ≤ j: twice
// the k-th Walsh average. It narrows, row by row, the columns that can still
// hold the answer around random pivots (Monahan 1984), in expected
// O(n log n) time.
func (w walsh) sumAt(k int, rng *rand.Rand) float64 {
	x, n := w.x, len(w.x)
	// Row i's candidates are the columns [lo[i], hi[i]); every sum left of
	// them is below the answer and every sum right of them above it.
	lo, hi := make([]int, n), make([]int, n)
	firstAt, firstAbove := make([]int, n), make([]int, n)
	for i := range n {
		lo[i], hi[i] = i, n
	}
	for {
		total, below := 0, 0
		for i := range n {
			total += hi[i] - lo[i]
			below += lo[i] - i
		}
		if total <= 4*n+16 {
			cand := make([]float64, 0, total)
			for i := range n {
				for j := lo[i]; j < hi[i]; j++ {
					cand = append(cand, x[i]+x[j])
				}
			}
			return selectKth(cand, k-below-1)
		}
		r := rng.IntN(total)
		var pivot float64
		for i := range n {
			if c := hi[i] - lo[i]; r < c {
				pivot = x[i] + x[lo[i]+r]
				break
			} else {
				r -= c
			}
		}
		// The rows' first columns at and above the pivot narrow them after.
		lt, le := w.countRows(pivot, firstAt, firstAbove)
		switch {
		case k > lt && k <= le:
			return pivot
		case k <= lt: // the answer is below the pivot
			for i := range n {
				hi[i] = min(hi[i], firstAt[i])
			}
		default: // above it
			for i := range n {
				lo[i] = max(lo[i], firstAbove[i])
			}
		}
	}
}

// nextSum returns the (k+1)-th smallest of the sums x_i + x_j, i ≤ j, given
// v, the k-th: v again when more than k sums are at most v, else the least
// sum above v. One pass, where sumAt would select again.
func (w walsh) nextSum(v float64, k int) float64 {
	x, n := w.x, len(w.x)
	atOrBelow, next := 0, math.Inf(1)
	je := n
	for i := range n {
		for je > i && x[i]+x[je-1] > v {
			je--
		}
		j := max(je, i) // row i's first sum above v
		atOrBelow += j - i
		if j < n {
			next = min(next, x[i]+x[j])
		}
	}
	if atOrBelow > k {
		return v
	}
	return next
}

// timeFloor is the shortest wall time the speed comparison takes as is:
// shorter times (0 s included) count as this long, so every log ratio is
// finite.
const timeFloor = 1e-3

// LogRatio is log(control/treatment) of one pair's wall times, exactly 0 when
// they are equal. It is computed as the log of the larger time over the
// smaller, so a pair with the times swapped gives exactly the opposite
// value: reciprocal ratios tie in absolute value.
func LogRatio(c, t float64) float64 {
	c, t = max(c, timeFloor), max(t, timeFloor)
	switch {
	case c == t:
		return 0
	case c > t:
		return math.Log(c / t)
	}
	return -math.Log(t / c)
}

// RankSample is a sample of log ratios prepared for the signed-rank test.
type RankSample struct {
	w walsh
	// lo and hi bound the statistic at δ = 0 over every way of breaking
	// ties: #{W > 0} and #{W ≥ 0}.
	lo, hi int
	// best is the statistic if every pair that does not tie at 0 favoured
	// the same arm: what the attainable p is computed from.
	best int
	// HL is the Hodges–Lehmann estimate, the median Walsh average (NaN
	// without pairs).
	HL float64
}

func NewRankSample(d []float64) RankSample {
	s := RankSample{w: newWalsh(d)}
	below, atOrBelow := s.w.count(0)
	m := s.w.m()
	s.lo, s.hi = m-atOrBelow, m-below
	zeros := 0
	for _, v := range d {
		if v == 0 {
			zeros++
		}
	}
	s.best = m - zeros*(zeros+1)/2
	s.HL = s.estimate()
	return s
}

func (s RankSample) N() int { return len(s.w.x) }

// P is the two-sided P at no difference.
func (s RankSample) P(null RankNull) float64 { return null.pRange(s.lo, s.hi) }

// PMin is the smallest p any signs of these magnitudes could give.
func (s RankSample) PMin(null RankNull) float64 { return null.pRange(s.best, null.m()) }

// rng is the pivot source of the Walsh selection: the answer does not depend
// on it, only the time taken.
func (s RankSample) rng() *rand.Rand { return rand.New(rand.NewPCG(uint64(s.N()), 0x5eed)) }

// estimate computes the Hodges–Lehmann estimate: the median Walsh average.
func (s RankSample) estimate() float64 {
	m := s.w.m()
	if m == 0 {
		return math.NaN()
	}
	rng := s.rng()
	if m%2 == 1 {
		return s.w.sumAt((m+1)/2, rng) / 2
	}
	below := s.w.sumAt(m/2, rng)
	return (below + s.w.nextSum(below, m/2)) / 4
}

// speedup returns the interval of speedups (control over treatment time)
// that the test at level alpha does not reject, with the estimate exp(HL).
// See speedupAt.
func (s RankSample) speedup(null RankNull, alpha float64) ExactInterval {
	c := null.Critical(alpha)
	return s.SpeedupAt(c, 1-RejectRate(null, c), s.P(null) > alpha)
}

// SpeedupAt is the interval of speedups the test with critical value c
// does not reject: [exp(W₍c₎), exp(W₍M−c+1₎)], closed, with the estimate
// exp(HL). With c = 0 (fewer pairs than can ever reject) it is the whole
// range (0, ∞), marked TooFew. level is its coverage for untied data,
// 1 − P(T < c or T > M − c), which ties only raise; accepts is whether the
// test accepts no difference, which the interval agrees with: it holds 1
// exactly when accepts.
func (s RankSample) SpeedupAt(c int, level float64, accepts bool) ExactInterval {
	return s.intervalAt(c, level, accepts, math.Exp, 0, 1)
}

// intervalAt is the interval the test with critical value c does not
// reject, on the scale f maps the differences to (exp for speedups, the
// identity for score differences): [f(W₍c₎), f(W₍M−c+1₎)], with the estimate
// f(HL); floor is f's least value (the whole range, for c = 0, runs from it
// to +∞) and none is f(0), no difference, which the interval holds exactly
// when accepts. See speedupAt.
func (s RankSample) intervalAt(c int, level float64, accepts bool, f func(float64) float64, floor, none float64) ExactInterval {
	iv := ExactInterval{Est: f(s.HL), Lo: floor, Hi: math.Inf(1), Level: 1}
	if c == 0 {
		iv.TooFew = true
		return iv
	}
	m := s.w.m()
	rng := s.rng()
	iv.Lo = f(s.w.sumAt(c, rng) / 2)
	iv.Hi = f(s.w.sumAt(m-c+1, rng) / 2)
	iv.Level = level
	// The test accepts no difference exactly when c ≤ #{W ≥ 0} and
	// #{W > 0} ≤ M − c, which is what the order statistics say too; f
	// can round a bound a hair from none onto none, so the test decides
	// there.
	switch {
	case !accepts && iv.Lo <= none && none <= iv.Hi:
		if s.lo > m-c { // every value accepted is above none
			iv.Lo, iv.LoOpen = none, true
		} else {
			iv.Hi, iv.HiOpen = none, true
		}
	case accepts && iv.Lo > none:
		iv.Lo = none
	case accepts && iv.Hi < none:
		iv.Hi = none
	}
	return iv
}

// SignedRank compares paired wall times, control tc[i] against treatment
// tt[i] (same length, not modified), by the exact Wilcoxon signed-rank test
// on log(tc/tt) (times below 1 ms count as 1 ms; equal times are ties). It
// returns the typical speedup, exp of the Hodges–Lehmann estimate, with the
// interval at 1 − alpha that inverts the test, and the test's two-sided p
// at no difference: p > alpha exactly when the interval holds 1.
func SignedRank(tc, tt []float64, alpha float64) (ExactInterval, float64) {
	d := make([]float64, len(tc))
	for i := range tc {
		d[i] = LogRatio(tc[i], tt[i])
	}
	s := NewRankSample(d)
	null := NullFor(s.N())
	return s.speedup(null, alpha), s.P(null)
}

// SignedRankTest is the signed-rank test for samples of one size, for
// repeated use (the power simulation in cmd/statstables): the null
// distribution is computed once.
type SignedRankTest struct {
	null RankNull
}

// NewSignedRankTest prepares the test for n pairs.
func NewSignedRankTest(n int) SignedRankTest { return SignedRankTest{null: NullFor(n)} }

// P returns the two-sided p of the log ratios d (len(d) must be the n the
// test was made for; d is not modified), ties handled as in SignedRank.
func (t SignedRankTest) P(d []float64) float64 {
	w := newWalsh(d)
	below, atOrBelow := w.count(0)
	m := w.m()
	return t.null.pRange(m-atOrBelow, m-below)
}

// RejectRate is the chance that the test with critical value c rejects
// untied pairs with no difference: 2·P(T < c).
func RejectRate(null RankNull, c int) float64 {
	if c == 0 {
		return 0
	}
	return min(1, 2*null.lower(c-1))
}

// Sorted is the sample's differences, ascending (not to be modified).
func (s RankSample) Sorted() []float64 { return s.w.x }
