package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// enumerateNull counts, by listing all 2ⁿ sign patterns, how many give each
// value of T = Σ i·Bᵢ: an independent reference for RankNull.
func enumerateNull(n int) []float64 {
	m := n * (n + 1) / 2
	counts := make([]float64, m+1)
	for mask := range 1 << n {
		t := 0
		for i := range n {
			if mask&(1<<i) != 0 {
				t += i + 1
			}
		}
		counts[t]++
	}
	cdf := make([]float64, m+1)
	sum := 0.0
	for t, c := range counts {
		sum += c
		cdf[t] = sum / float64(int(1)<<n)
	}
	return cdf
}

func TestRankNullMatchesEnumeration(t *testing.T) {
	var ns []int
	for n := 0; n <= 16; n++ {
		ns = append(ns, n)
	}
	seen := 0
	RankNulls(ns, func(d RankNull) {
		seen++
		want := enumerateNull(d.N)
		for tt := -1; tt <= d.m()+1; tt++ {
			w := 0.0
			if tt >= 0 {
				w = want[min(tt, d.m())]
			}
			require.InDelta(t, w, d.lower(tt), 1e-14, "n=%d t=%d", d.N, tt)
		}
	})
	assert.Equal(t, len(ns), seen)
	// Published critical values (two-sided α = 0.05: reject T ≤ c−1):
	// n = 6 → 0, n = 10 → 8, n = 20 → 52, n = 30 → 137.
	for n, want := range map[int]int{5: 0, 6: 1, 10: 9, 20: 53, 30: 138} {
		assert.Equal(t, want, NullFor(n).Critical(0.05), "n=%d", n)
	}
}

// TestRankNullApproximation measures the normal approximation used above
// exactRankMax pairs against the exact distribution at 1,000 pairs: the
// figures docs/statistics.md quotes.
func TestRankNullApproximation(t *testing.T) {
	exact := NullFor(exactRankMax)
	approx := RankNull{N: exactRankMax}
	worst := 0.0
	for tt := 0; tt <= exact.m()/2; tt += 7 {
		worst = max(worst, math.Abs(exact.lower(tt)-approx.lower(tt)))
	}
	t.Logf("largest error of P(T ≤ t) at n = %d: %.2g", exactRankMax, worst)
	assert.Less(t, worst, 1e-7)
	for _, tc := range []struct{ alpha, rel float64 }{{0.05, 2e-6}, {0.05 / 20, 2e-5}, {0.05 / 1000, 5e-4}} {
		c := exact.Critical(tc.alpha)
		e, a := exact.lower(c-1), approx.lower(c-1)
		t.Logf("α = %g: tail %.6g exact, %.6g approximated (relative error %.2g)", tc.alpha, e, a, math.Abs(e-a)/e)
		assert.Less(t, math.Abs(e-a)/e, tc.rel)
		assert.InDelta(t, c, approx.Critical(tc.alpha), 1, "critical value at α = %g", tc.alpha)
	}
}

// walshBrute lists every sum x_i + x_j, i ≤ j, sorted.
func walshBrute(d []float64) []float64 {
	var s []float64
	for i := range d {
		for j := i; j < len(d); j++ {
			s = append(s, d[i]+d[j])
		}
	}
	slices.Sort(s)
	return s
}

func TestWalshSelectAndCount(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 420 {
		n := 1 + r.IntN(60)
		if trial >= 400 { // a report's sizes, where sumAt takes several rounds
			n = 200 + r.IntN(500)
		}
		d := make([]float64, n)
		for i := range d {
			if trial%2 == 0 {
				d[i] = float64(r.IntN(7) - 3) // heavy ties
			} else {
				d[i] = r.NormFloat64()
			}
		}
		w := newWalsh(d)
		all := walshBrute(d)
		for range 5 {
			k := 1 + r.IntN(len(all))
			require.Equal(t, all[k-1], w.sumAt(k, r), "k=%d of %v", k, d)
			if k < len(all) {
				require.Equal(t, all[k], w.nextSum(all[k-1], k), "the sum after k=%d of %v", k, d)
			}
		}
		v := all[r.IntN(len(all))]
		below, at := w.count(v)
		wb, wa := 0, 0
		for _, s := range all {
			if s < v {
				wb++
			}
			if s <= v {
				wa++
			}
		}
		require.Equal(t, [2]int{wb, wa}, [2]int{below, at})
	}
}

// acceptsBrute is the conservative signed-rank test of "the typical log
// ratio is delta", computed directly: it ranks |d − δ| with midranks and
// takes the largest p over every way of breaking ties and signing zeros,
// which the Walsh-average form claims is the p of the statistic nearest the
// middle of [#{W > δ}, #{W ≥ δ}].
func acceptsBrute(d []float64, delta float64, null RankNull, alpha float64) bool {
	lo, hi := 0, 0
	for i := range d {
		for j := i; j < len(d); j++ {
			// (d_i − δ) + (d_j − δ) compared with 0, as d_i + d_j with 2δ
			// so that the Walsh averages themselves compare exactly.
			if s := d[i] + d[j]; s > 2*delta {
				lo++
			} else if s == 2*delta {
				hi++
			}
		}
	}
	return null.pRange(lo, lo+hi) > alpha
}

// TestSpeedupIntervalIsTheTestsDual checks, on samples with many ties and
// zeros, that every candidate speedup (each Walsh average, the midpoints
// between them, and beyond both ends) lies in the interval exactly when the
// test does not reject it, and that the p at 1 agrees.
func TestSpeedupIntervalIsTheTestsDual(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 1500 {
		n := 1 + r.IntN(25)
		d := make([]float64, n)
		shift := r.IntN(5) - 2
		for i := range d {
			d[i] = math.Log(float64(4+r.IntN(5)+shift) / float64(4+r.IntN(5))) // coarse: ties and zeros
		}
		alpha := []float64{0.05, 0.01, 0.1, 0.0025}[trial%4]
		s := NewRankSample(d)
		null := NullFor(n)
		iv := s.speedup(null, alpha)
		require.Equal(t, s.P(null) > alpha, iv.Contains(1), "d=%v p=%v iv=%+v", d, s.P(null), iv)
		require.Equal(t, acceptsBrute(d, 0, null, alpha), s.P(null) > alpha)
		sums := walshBrute(d)
		cands := []float64{sums[0]/2 - 1, sums[len(sums)-1]/2 + 1}
		for i, v := range sums {
			cands = append(cands, v/2)
			if i+1 < len(sums) && sums[i+1] > v {
				cands = append(cands, (v+sums[i+1])/4)
			}
		}
		// Exp can map distinct log ratios onto one float, so the candidates
		// are checked against the interval's bounds in log space.
		c, m := null.Critical(alpha), null.m()
		var loSum, hiSum float64
		if !iv.TooFew {
			loSum, hiSum = s.w.sumAt(c, r), s.w.sumAt(m-c+1, r)
			require.Equal(t, math.Exp(loSum/2), iv.Lo)
			require.Equal(t, math.Exp(hiSum/2), iv.Hi)
		}
		for _, delta := range cands {
			inside := iv.TooFew || (loSum <= 2*delta && 2*delta <= hiSum)
			require.Equal(t, acceptsBrute(d, delta, null, alpha), inside, "δ=%v d=%v iv=%+v", delta, d, iv)
		}
	}
}

// TestSignedRankIsExactWithTies lists every sign pattern of samples whose
// magnitudes tie and include zeros, and checks the test rejects no more
// than alpha of them: under no difference each pair's sign is a fair coin.
func TestSignedRankIsExactWithTies(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 60 {
		n := 6 + r.IntN(8)
		mag := make([]float64, n)
		for i := range mag {
			mag[i] = float64(r.IntN(4)) // 0 is a zero, the rest tie in groups
		}
		null := NullFor(n)
		for _, alpha := range []float64{0.05, 0.1} {
			rejected := 0
			d := make([]float64, n)
			for mask := range 1 << n {
				for i := range n {
					d[i] = mag[i]
					if mask&(1<<i) != 0 {
						d[i] = -mag[i]
					}
				}
				if NewRankSample(d).P(null) <= alpha {
					rejected++
				}
			}
			rate := float64(rejected) / float64(int(1)<<n)
			require.LessOrEqual(t, rate, alpha, "magnitudes %v", mag)
		}
	}
}

func TestSignedRankTestAgreesWithSignedRank(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 300 {
		n := 1 + r.IntN(40)
		tc, tt, d := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range n {
			tc[i], tt[i] = float64(1+r.IntN(6)), float64(1+r.IntN(6))
			d[i] = LogRatio(tc[i], tt[i])
		}
		_, p := SignedRank(tc, tt, 0.05)
		require.Equal(t, p, NewSignedRankTest(n).P(d))
	}
}
