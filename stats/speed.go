package stats

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// MinResamples is the smallest number of bootstrap resamples Build uses.
const MinResamples = 10_000

// median returns the median of xs (the mean of the two middle values when
// len(xs) is even), or NaN when xs is empty. It reorders xs.
func median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	hi := selectKth(xs, n/2)
	if n%2 == 1 {
		return hi
	}
	// After selection every value left of n/2 is at most xs[n/2].
	return (slices.Max(xs[:n/2]) + hi) / 2
}

// selectKth reorders xs so that xs[k] is its k-th smallest value (from 0),
// nothing left of it is larger and nothing right of it smaller, and returns
// xs[k]. It partitions three ways, so runs of equal values cost nothing.
func selectKth(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		// Median of three as the pivot.
		mid := lo + (hi-lo)/2
		a, b, c := xs[lo], xs[mid], xs[hi]
		pivot := max(min(a, b), min(max(a, b), c))
		// Dutch national flag: [lo,lt) < pivot, [lt,i) == pivot, (gt,hi] > pivot.
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch v := xs[i]; {
			case v < pivot:
				xs[lt], xs[i] = xs[i], xs[lt]
				lt++
				i++
			case v > pivot:
				xs[gt], xs[i] = xs[i], xs[gt]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return xs[k]
		}
	}
	return xs[k]
}

// Typical returns the typical per-pair speedup, exp(median of
// log(control/treatment)) over the pairs' wall times, with the exact
// interval that inverts the two-sided sign test at alpha, and the sign
// test's p at a speedup of 1 (ties dropped).
//
// The interval holds exactly the speedups s whose sign test (pairs with
// ratio s dropped as ties) does not reject, so p > alpha if and only if the
// interval contains 1. Its bounds are observed per-pair ratios, or 0 and
// +Inf when too few pairs bound it; Level is the coverage of the usual
// order-statistic interval at this many pairs. tc and tt must have the same
// length; a pair whose two times are equal has ratio 1.
func Typical(tc, tt []float64, alpha float64) (ExactInterval, float64) {
	r := make([]float64, len(tc))
	for i := range tc {
		r[i] = pairRatio(tc[i], tt[i])
	}
	return typicalRatios(r, alpha)
}

// pairRatio is control time over treatment time, 1 when they are equal
// (including both zero).
func pairRatio(c, t float64) float64 {
	if c == t {
		return 1
	}
	return c / t
}

// typicalRatios is Typical on per-pair ratios; it sorts r.
func typicalRatios(r []float64, alpha float64) (ExactInterval, float64) {
	n := len(r)
	slices.Sort(r)
	var pos, neg int
	for _, v := range r {
		switch {
		case v > 1:
			pos++
		case v < 1:
			neg++
		}
	}
	p := SignTest(pos, neg)
	if n == 0 {
		return ExactInterval{Est: math.NaN(), Lo: 0, Hi: math.Inf(1), Level: 1}, p
	}
	est := r[n/2]
	if n%2 == 0 {
		est = math.Sqrt(r[n/2-1] * r[n/2]) // exp of the mean of the two middle logs
	}
	crit := map[int]int{}
	accept := func(below, above int) bool {
		m := below + above
		k, ok := crit[m]
		if !ok {
			k = critical(m, alpha)
			crit[m] = k
		}
		return min(below, above) >= k
	}
	// Walk the candidate speedups from the left: the open gap below each
	// distinct ratio, then the ratio itself (its pairs are ties there).
	iv := ExactInterval{Est: est, Lo: 0, Hi: math.Inf(1)}
	found := false
	for i := 0; i < n && !found; {
		j := i
		for j < n && r[j] == r[i] {
			j++
		}
		switch {
		case accept(i, n-i): // the gap just below r[i]
			found = true
			if i > 0 {
				iv.Lo, iv.LoOpen = r[i-1], true
			}
		case accept(i, n-j): // r[i] itself
			found = true
			iv.Lo = r[i]
		}
		i = j
	}
	if !found { // only the gap above the largest ratio is left
		iv.Lo, iv.LoOpen = r[n-1], true
	}
	found = false
	for j := n; j > 0 && !found; {
		i := j - 1
		for i > 0 && r[i-1] == r[j-1] {
			i--
		}
		switch {
		case accept(j, n-j): // the gap just above r[j-1]
			found = true
			if j < n {
				iv.Hi, iv.HiOpen = r[j], true
			}
		case accept(i, n-j): // r[j-1] itself
			found = true
			iv.Hi = r[j-1]
		}
		j = i
	}
	if !found {
		iv.Hi, iv.HiOpen = r[0], true
	}
	iv.Level = 1
	if k := critical(n, alpha); k > 0 {
		iv.Level = 1 - 2*distuv.Binomial{N: float64(n), P: 0.5}.CDF(float64(k-1))
	}
	return iv, p
}

// RatioOfMedians returns median(tc)/median(tt) with a percentile bootstrap
// interval at level 1−alpha from b resamples of the pairs, drawn from rng.
// tc and tt are the pairs' control and treatment times (same length, not
// modified). With no pairs Est is NaN and the interval is [0, +Inf]; a
// resample whose treatment median is 0 has ratio +Inf.
func RatioOfMedians(tc, tt []float64, alpha float64, b int, rng *rand.Rand) Interval {
	n := len(tc)
	if n == 0 {
		return Interval{Est: math.NaN(), Lo: 0, Hi: math.Inf(1)}
	}
	core, wide := bandHalfWidths(n)
	bs := newBootstrap(tc, tt, core, wide)
	est := ratio(median(slices.Clone(tc)), median(slices.Clone(tt)))
	stats := make([]float64, b)
	ix := &indexer{rng: rng}
	for i := range stats {
		stats[i] = bs.resample(ix)
	}
	lo := int(math.Floor(alpha / 2 * float64(b)))
	hi := int(math.Ceil((1-alpha/2)*float64(b))) - 1
	lo, hi = min(max(lo, 0), b-1), min(max(hi, 0), b-1)
	loV := selectKth(stats, lo)
	hiV := selectKth(stats[lo:], hi-lo)
	return Interval{Est: est, Lo: loV, Hi: hiV}
}

func ratio(c, t float64) float64 {
	if c == t {
		return 1
	}
	return c / t
}

// bandHalfWidths are how many ranks either side of the middle the band
// bootstrap follows individually: the core, about two standard deviations
// of a resample median's rank (which the median leaves in a few percent of
// resamples), and the wide band, six (left about once in a billion).
func bandHalfWidths(n int) (core, wide int) {
	sd := math.Sqrt(float64(n)) / 2
	return int(math.Ceil(2*sd)) + 2, int(math.Ceil(6*sd)) + 4
}

// bootstrap draws paired resamples and returns each one's ratio of
// medians.
//
// For many pairs it does not draw all n pairs of a resample. A resample is n
// independent uniform draws of pairs, so for any split of the pairs into
// groups, the numbers of draws per group are multinomial and the draws in a
// group are uniform over it. The median of each arm depends only on the
// draws near the middle ranks, so bootstrap splits the pairs into the core
// (control or treatment rank within the core band), four cells by whether
// each arm's rank is below or above the core, and within each cell the
// ring (a rank within the wide band) and the rest. It draws the core pairs
// one by one and only the cell counts; when an arm's median is not in the
// core, it draws the rings one by one; when it is not in the wide band
// either, it draws the rest too and takes the medians in full. The
// resampling distribution is exactly that of the plain bootstrap.
type bootstrap struct {
	tc, tt []float64
	n      int
	direct bool

	// Ranks are kept as slots: 0 is below the wide band, 1..w its ranks in
	// order, w+1 above it, so that a draw is two increments.
	w              int
	coreLo, coreHi int       // the core band's slots
	valC, valT     []float64 // times of slots 1..w (index slot-1)
	pairC, pairT   []int32   // the pair at slots 1..w (index slot-1)
	core           []bandPair
	ring, far      [4][]bandPair // by cell: control below core (2), treatment below core (1)
	cellSize       [4]int
	cntC, cntT     []int32 // draws per slot
	outsideC       []bool  // per pair: control rank outside the wide band

	bufC, bufT []float64 // scratch for full medians
}

// bandPair is a pair and its slot in each arm.
type bandPair struct {
	idx  int32
	c, t int32
}

func newBootstrap(tc, tt []float64, coreK, wideK int) *bootstrap {
	n := len(tc)
	bs := &bootstrap{tc: tc, tt: tt, n: n, bufC: make([]float64, n), bufT: make([]float64, n)}
	wlo, whi := max(0, (n-1)/2-wideK), min(n-1, n/2+wideK)
	clo, chi := max(0, (n-1)/2-coreK), min(n-1, n/2+coreK)
	if 4*(chi-clo+1) > n {
		bs.direct = true
		return bs
	}
	w := whi - wlo + 1
	bs.w, bs.coreLo, bs.coreHi = w, clo-wlo+1, chi-wlo+1
	rankC, orderC := ranks(tc)
	rankT, orderT := ranks(tt)
	bs.pairC, bs.pairT = orderC[wlo:whi+1], orderT[wlo:whi+1]
	bs.valC, bs.valT = make([]float64, w), make([]float64, w)
	for i := range w {
		bs.valC[i], bs.valT[i] = tc[bs.pairC[i]], tt[bs.pairT[i]]
	}
	slot := func(r int32) int32 {
		switch {
		case int(r) < wlo:
			return 0
		case int(r) > whi:
			return int32(w + 1)
		}
		return r - int32(wlo) + 1
	}
	inCore := func(r int32) bool { return int(r) >= clo && int(r) <= chi }
	bs.outsideC = make([]bool, n)
	for i := range n {
		p := bandPair{idx: int32(i), c: slot(rankC[i]), t: slot(rankT[i])}
		bs.outsideC[i] = p.c == 0 || int(p.c) == w+1
		if inCore(rankC[i]) || inCore(rankT[i]) {
			bs.core = append(bs.core, p)
			continue
		}
		cell := 0
		if int(rankC[i]) < clo {
			cell |= 2
		}
		if int(rankT[i]) < clo {
			cell |= 1
		}
		bs.cellSize[cell]++
		if !bs.outsideC[i] || (p.t != 0 && int(p.t) != w+1) {
			bs.ring[cell] = append(bs.ring[cell], p)
		} else {
			bs.far[cell] = append(bs.far[cell], p)
		}
	}
	bs.cntC = make([]int32, w+2)
	bs.cntT = make([]int32, w+2)
	return bs
}

// ranks returns each value's rank (ties broken by index) and the indices
// in rank order.
func ranks(xs []float64) (rank, order []int32) {
	order = make([]int32, len(xs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		switch {
		case xs[a] < xs[b]:
			return -1
		case xs[a] > xs[b]:
			return 1
		}
		return int(a - b)
	})
	rank = make([]int32, len(xs))
	for r, i := range order {
		rank[i] = int32(r)
	}
	return rank, order
}

func sum(xs []int32) int {
	t := 0
	for _, x := range xs {
		t += int(x)
	}
	return t
}

// resample draws one resample and returns its ratio of medians.
func (bs *bootstrap) resample(ix *indexer) float64 {
	rng, n := ix.rng, bs.n
	if bs.direct {
		for i := range n {
			j := ix.intN(n)
			bs.bufC[i], bs.bufT[i] = bs.tc[j], bs.tt[j]
		}
		return ratio(median(bs.bufC), median(bs.bufT))
	}
	defer func() {
		clear(bs.cntC)
		clear(bs.cntT)
	}()
	m := binomial(n, float64(len(bs.core))/float64(n), rng)
	cntC, cntT, corePairs := bs.cntC, bs.cntT, bs.core // locals keep the loop in registers
	for range m {
		p := corePairs[ix.intN(len(corePairs))]
		cntC[p.c]++
		cntT[p.t]++
	}
	// Draws per cell.
	var x [4]int
	rest, size := n-m, n-len(bs.core)
	for c := range 4 {
		s := bs.cellSize[c]
		if c == 3 || rest == 0 {
			x[c] = rest
		} else if s > 0 {
			x[c] = binomial(rest, float64(s)/float64(size), rng)
		}
		rest -= x[c]
		size -= s
	}
	core := bs.coreLo
	belowC := x[2] + x[3] + sum(bs.cntC[:core])
	belowT := x[1] + x[3] + sum(bs.cntT[:core])
	mc, okC := bandMedian(bs.cntC[core:bs.coreHi+1], belowC, bs.valC[core-1:], n)
	mt, okT := bandMedian(bs.cntT[core:bs.coreHi+1], belowT, bs.valT[core-1:], n)
	if okC && okT {
		return ratio(mc, mt)
	}
	// A median left the core: draw the rings one by one.
	var farX [4]int
	for c := range 4 {
		r := binomial(x[c], float64(len(bs.ring[c]))/float64(max(1, bs.cellSize[c])), rng)
		for range r {
			p := bs.ring[c][ix.intN(len(bs.ring[c]))]
			bs.cntC[p.c]++
			bs.cntT[p.t]++
		}
		farX[c] = x[c] - r
	}
	if !okC {
		mc, okC = bandMedian(bs.cntC[1:bs.w+1], farX[2]+farX[3]+int(bs.cntC[0]), bs.valC, n)
	}
	if !okT {
		mt, okT = bandMedian(bs.cntT[1:bs.w+1], farX[1]+farX[3]+int(bs.cntT[0]), bs.valT, n)
	}
	if okC && okT {
		return ratio(mc, mt)
	}
	// Rare: a median left the wide band. Rebuild the pairs drawn so far
	// from the counts (each slot of the wide band is one pair; a pair whose
	// control rank is outside it is found by its treatment slot), then draw
	// the rest and take the medians in full.
	k := 0
	add := func(i int32, times int32) {
		for range times {
			bs.bufC[k], bs.bufT[k] = bs.tc[i], bs.tt[i]
			k++
		}
	}
	for s := 1; s <= bs.w; s++ {
		add(bs.pairC[s-1], bs.cntC[s])
		if i := bs.pairT[s-1]; bs.outsideC[i] {
			add(i, bs.cntT[s])
		}
	}
	for c, cell := range bs.far {
		for range farX[c] {
			add(cell[ix.intN(len(cell))].idx, 1)
		}
	}
	return ratio(median(bs.bufC[:k]), median(bs.bufT[:k]))
}

// indexer draws uniform indices below a bound, two from each 64-bit value
// of its source, by Lemire's multiply-and-reject method (exactly uniform).
type indexer struct {
	rng   *rand.Rand
	spare uint32
	have  bool
}

// intN returns a uniform integer in [0, n) for 0 < n < 2³².
func (x *indexer) intN(n int) int {
	bound := uint32(n)
	for {
		var v uint32
		if x.have {
			v, x.have = x.spare, false
		} else {
			u := x.rng.Uint64()
			v, x.spare, x.have = uint32(u), uint32(u>>32), true
		}
		prod := uint64(v) * uint64(bound)
		if low := uint32(prod); low < bound && low < -bound%bound {
			continue // reject to stay exactly uniform
		}
		return int(prod >> 32)
	}
}

// bandMedian returns the median of a resample of n values given how many
// fell below a band of ranks and the counts per rank in it, or false when a
// middle value lies outside the band.
func bandMedian(cnt []int32, below int, vals []float64, n int) (float64, bool) {
	j1, j2 := (n-1)/2, n/2
	if below > j1 {
		return 0, false
	}
	cum := below
	var v1 float64
	have1 := false
	for r, c := range cnt {
		cum += int(c)
		if !have1 && cum > j1 {
			v1, have1 = vals[r], true
		}
		if cum > j2 {
			return (v1 + vals[r]) / 2, true
		}
	}
	return 0, false
}

// binomial draws from Bin(n, p) with gonum.
func binomial(n int, p float64, rng *rand.Rand) int {
	switch {
	case n == 0 || p <= 0:
		return 0
	case p >= 1:
		return n
	}
	return int(distuv.Binomial{N: float64(n), P: p, Src: rng}.Rand())
}
