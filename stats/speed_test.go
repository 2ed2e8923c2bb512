package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSelectKthAndMedian(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		xs := make([]float64, 1+r.IntN(40))
		for i := range xs {
			xs[i] = float64(r.IntN(8)) // many ties
		}
		sorted := slices.Sorted(slices.Values(xs))
		k := r.IntN(len(xs))
		got := selectKth(slices.Clone(xs), k)
		require.Equal(t, sorted[k], got, "selectKth(%v, %d)", xs, k)
		n := len(sorted)
		want := sorted[n/2]
		if n%2 == 0 {
			want = (sorted[n/2-1] + sorted[n/2]) / 2
		}
		require.Equal(t, want, median(slices.Clone(xs)), "median(%v)", xs)
	}
	assert.True(t, math.IsNaN(median(nil)))
}

// acceptedBrute reports whether the sign test, computed directly, does not
// reject the speedup s for the ratios r.
func acceptedBrute(r []float64, s, alpha float64) bool {
	var pos, neg int
	for _, v := range r {
		switch {
		case v > s:
			pos++
		case v < s:
			neg++
		}
	}
	return SignTest(pos, neg) > alpha
}

func TestTypicalInvertsTheSignTest(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 3000 {
		n := 1 + rng.IntN(30)
		tc, tt := make([]float64, n), make([]float64, n)
		shift := rng.Float64()*2 - 0.5
		for i := range n {
			// Coarse times so that ties (ratio 1 and repeated ratios) occur.
			tt[i] = float64(1 + rng.IntN(6))
			tc[i] = math.Max(1, math.Round(tt[i]*(1+shift)+float64(rng.IntN(3)-1)))
		}
		alpha := []float64{0.05, 0.01, 0.1}[trial%3]
		iv, p := Typical(tc, tt, alpha)
		require.Equal(t, p > alpha, iv.Contains(1), "n=%d tc=%v tt=%v p=%v iv=%+v", n, tc, tt, p, iv)
		require.LessOrEqual(t, iv.Lo, iv.Hi)

		// Every candidate (each ratio and each gap's midpoint) is inside the
		// interval exactly when the sign test accepts it.
		r := make([]float64, n)
		for i := range r {
			r[i] = pairRatio(tc[i], tt[i])
		}
		slices.Sort(r)
		cands := []float64{r[0] / 2, r[n-1] * 2}
		for i, v := range r {
			cands = append(cands, v)
			if i+1 < n && r[i+1] > v {
				cands = append(cands, (v+r[i+1])/2)
			}
		}
		for _, s := range cands {
			require.Equal(t, acceptedBrute(r, s, alpha), iv.Contains(s), "speedup %v for ratios %v: %+v", s, r, iv)
		}
	}
}

func TestTypicalWorkedExample(t *testing.T) {
	// Seven both-correct pairs, treatment faster in all: p = 2/128.
	tc := []float64{130, 120, 140, 150, 125, 135, 145}
	tt := []float64{50, 40, 55, 60, 45, 52, 58}
	iv, p := Typical(tc, tt, 0.05)
	assert.Equal(t, 0.0156, round4(p))
	assert.False(t, iv.Contains(1))
	assert.Greater(t, iv.Lo, 1.0)
	// With 7 untied pairs the interval is [r(1), r(7)] at 98.4%.
	assert.InDelta(t, 1-2.0/128, iv.Level, 1e-12)
}

func TestTypicalTooFewPairsIsUnbounded(t *testing.T) {
	iv, p := Typical([]float64{10, 12, 9}, []float64{5, 6, 4}, 0.05)
	assert.InDelta(t, 0.25, p, 1e-12)
	assert.Equal(t, 0.0, iv.Lo)
	assert.True(t, math.IsInf(iv.Hi, 1))
	assert.True(t, iv.Contains(1))
	assert.Equal(t, 1.0, iv.Level)
}

func TestRatioOfMediansWorkedExample(t *testing.T) {
	// Control median 130, treatment median 50: 2.6.
	tc := []float64{130, 120, 140, 150, 125, 110, 145}
	tt := []float64{50, 40, 55, 60, 45, 48, 58}
	iv := RatioOfMedians(tc, tt, 0.05, MinResamples, rand.New(rand.NewPCG(1, 1)))
	assert.InDelta(t, 2.6, iv.Est, 1e-12)
	assert.Less(t, iv.Lo, iv.Est)
	assert.Greater(t, iv.Hi, iv.Est)
	assert.Greater(t, iv.Lo, 1.0, "every resample has treatment faster")
	again := RatioOfMedians(tc, tt, 0.05, MinResamples, rand.New(rand.NewPCG(1, 1)))
	assert.Equal(t, iv, again, "the same seed gives the same interval")
	assert.Equal(t, []float64{130, 120, 140, 150, 125, 110, 145}, tc, "inputs are not modified")
}

// quantiles returns the 2.5%, 50% and 97.5% points of b resamples.
func quantiles(bs *bootstrap, b int, rng *rand.Rand) [3]float64 {
	s := make([]float64, b)
	ix := &indexer{rng: rng}
	for i := range s {
		s[i] = bs.resample(ix)
	}
	slices.Sort(s)
	return [3]float64{s[b/40], s[b/2], s[b-b/40-1]}
}

func TestBandBootstrapMatchesDirect(t *testing.T) {
	gen := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		name       string
		n          int
		core, wide int
	}{
		{"usual bands", 2000, 0, 0},
		{"narrow bands, often left", 801, 3, 8},
		{"narrow core, wide band kept", 801, 3, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, tr := make([]float64, tc.n), make([]float64, tc.n)
			for i := range c {
				tr[i] = 20 + gen.ExpFloat64()*30
				c[i] = tr[i]*1.3 + gen.NormFloat64()*10 + 5
			}
			core, wide := tc.core, tc.wide
			if core == 0 {
				core, wide = bandHalfWidths(tc.n)
			}
			band := newBootstrap(c, tr, core, wide)
			require.False(t, band.direct, "the band form is in use")
			direct := newBootstrap(c, tr, tc.n, tc.n)
			require.True(t, direct.direct)
			const b = 3000
			qb := quantiles(band, b, rand.New(rand.NewPCG(9, 10)))
			qd := quantiles(direct, b, rand.New(rand.NewPCG(11, 12)))
			width := qd[2] - qd[0]
			for i := range qb {
				assert.InDelta(t, qd[i], qb[i], width*0.08, "quantile %d: band %v direct %v", i, qb, qd)
			}
		})
	}
}

func TestIndexerIsUniform(t *testing.T) {
	ix := &indexer{rng: rand.New(rand.NewPCG(1, 1))}
	const n, draws = 7, 70_000
	var counts [n]int
	for range draws {
		counts[ix.intN(n)]++
	}
	// Chi-square with 6 degrees of freedom; 22.46 is its 0.999 quantile.
	chi := 0.0
	for _, c := range counts {
		d := float64(c) - draws/n
		chi += d * d / (draws / n)
	}
	assert.Less(t, chi, 22.46, "counts %v", counts)
	for range 1000 {
		require.Equal(t, 0, ix.intN(1))
	}
}

func BenchmarkRatioOfMedians10k(b *testing.B) {
	gen := rand.New(rand.NewPCG(1, 2))
	c, tr := make([]float64, 10_000), make([]float64, 10_000)
	for i := range c {
		tr[i] = 20 + gen.ExpFloat64()*30
		c[i] = tr[i]*1.3 + gen.NormFloat64()*10 + 5
	}
	for b.Loop() {
		RatioOfMedians(c, tr, 0.05, MinResamples, rand.New(rand.NewPCG(3, 4)))
	}
}

// TestBandMediansAreExact takes explicit resamples, counts them the way the
// band bootstrap does, and checks that whenever the band decides a median it
// equals the median of the resample itself.
func TestBandMediansAreExact(t *testing.T) {
	gen := rand.New(rand.NewPCG(13, 14))
	const n = 1001
	c, tr := make([]float64, n), make([]float64, n)
	for i := range c {
		tr[i] = float64(gen.IntN(300)) // ties within each arm
		c[i] = tr[i] + float64(gen.IntN(200))
	}
	bs := newBootstrap(c, tr, 6, 20)
	require.False(t, bs.direct)
	type where struct {
		p    bandPair
		cell int // -1 for core pairs
	}
	byPair := map[int32]where{}
	for _, p := range bs.core {
		byPair[p.idx] = where{p, -1}
	}
	for cell := range 4 {
		for _, p := range append(slices.Clone(bs.ring[cell]), bs.far[cell]...) {
			byPair[p.idx] = where{p, cell}
		}
	}
	require.Len(t, byPair, n, "every pair is in exactly one group")
	decided := 0
	for range 3000 {
		cntC, cntT := make([]int32, bs.w+2), make([]int32, bs.w+2)
		var belowC, belowT int
		rc, rt := make([]float64, n), make([]float64, n)
		for k := range n {
			i := int32(gen.IntN(n))
			rc[k], rt[k] = c[i], tr[i]
			w := byPair[i]
			cntC[w.p.c]++
			cntT[w.p.t]++
			if w.cell >= 0 && w.cell&2 != 0 {
				belowC++
			}
			if w.cell >= 0 && w.cell&1 != 0 {
				belowT++
			}
			// Cell pairs are counted by their cell, not their slot, below the core.
			if w.cell >= 0 && w.p.c < int32(bs.coreLo) {
				cntC[w.p.c]--
			}
			if w.cell >= 0 && w.p.t < int32(bs.coreLo) {
				cntT[w.p.t]--
			}
		}
		belowC += sum(cntC[:bs.coreLo])
		belowT += sum(cntT[:bs.coreLo])
		if mc, ok := bandMedian(cntC[bs.coreLo:bs.coreHi+1], belowC, bs.valC[bs.coreLo-1:], n); ok {
			decided++
			require.Equal(t, median(rc), mc, "control median")
		}
		if mt, ok := bandMedian(cntT[bs.coreLo:bs.coreHi+1], belowT, bs.valT[bs.coreLo-1:], n); ok {
			require.Equal(t, median(rt), mt, "treatment median")
		}
	}
	assert.Greater(t, decided, 600, "a core of ±6 ranks (sd ≈ 16) still decides about a third of the medians")
}
