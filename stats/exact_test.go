package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// z95 is the quantile STATS.md's known-answer vectors use.
const z95 = 1.959964

func round4(f float64) float64 { return math.Round(f*1e4) / 1e4 }

func TestZ(t *testing.T) {
	assert.InDelta(t, z95, Z(0.05), 1e-6)
	assert.InDelta(t, 2.575829, Z(0.01), 1e-6)
}

func TestWilsonKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		x, n   int
		lo, hi float64
	}{
		{0, 10, 0, 0.2775},
		{10, 10, 0.7225, 1},
		{7, 20, 0.1812, 0.5671},
		{81, 263, 0.2553, 0.3662},
	} {
		t.Run(fmt.Sprintf("%d/%d", tc.x, tc.n), func(t *testing.T) {
			iv := Wilson(tc.x, tc.n, z95)
			assert.Equal(t, tc.lo, round4(iv.Lo), "lower bound")
			assert.Equal(t, tc.hi, round4(iv.Hi), "upper bound")
			assert.InDelta(t, float64(tc.x)/float64(tc.n), iv.Est, 1e-12)
		})
	}
}

func TestWilsonEmpty(t *testing.T) {
	iv := Wilson(0, 0, z95)
	assert.True(t, math.IsNaN(iv.Est))
	assert.Equal(t, 0.0, iv.Lo)
	assert.Equal(t, 1.0, iv.Hi)
}

// TestShareKnownAnswers checks the Clopper–Pearson interval of the
// discordant share against bounds computed independently, by bisection on
// binomial tail sums in exact rational arithmetic (Python's fractions), and
// the published examples of Fagerland et al. (2014): the airway
// hyper-responsiveness table (a, b, c, d) = (1, 1, 7, 12) and the complete
// response table (59, 6, 16, 80), whose exact McNemar p values 0.0703 and
// 0.0525 are both above 0.05. (The Newcombe interval this replaces excluded
// 0 for the second, (−0.1186, −0.0046), beside that p.)
func TestShareKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		b, c   int
		lo, hi float64
		p      float64
	}{
		{0, 10, 0, 0.3085, 0.00195},
		{7, 13, 0.1539, 0.5922, 0.26318},
		{1, 7, 0.0032, 0.5265, 0.07031},
		{6, 16, 0.1073, 0.5022, 0.05248},
		{15, 5, 0.5090, 0.9134, 0.04139},
		{14, 6, 0.4572, 0.8811, 0.11532},
		{2, 0, 0.1581, 1, 0.5},
	} {
		t.Run(fmt.Sprintf("%d,%d", tc.b, tc.c), func(t *testing.T) {
			iv := Share(tc.b, tc.c, 0.05)
			assert.Equal(t, tc.lo, round4(iv.Lo), "lower bound")
			assert.Equal(t, tc.hi, round4(iv.Hi), "upper bound")
			assert.Equal(t, tc.b > 0, iv.LoOpen)
			assert.Equal(t, tc.c > 0, iv.HiOpen)
			p, _ := McNemar(tc.b, tc.c)
			assert.Equal(t, tc.p, math.Round(p*1e5)/1e5, "McNemar p")
			assert.Equal(t, p > 0.05, iv.Contains(0.5), "the interval holds ½ exactly when the test accepts")
			assert.Equal(t, 0.95, iv.Level)
		})
	}
	assert.True(t, math.IsNaN(Share(0, 0, 0.05).Est))
	assert.True(t, Share(3, 2, 0.05).TooFew, "5 discordant pairs can never reach 0.05")
	assert.False(t, Share(3, 3, 0.05).TooFew)
}

// TestShareIsTheTestsDual checks, for every table with up to 60 discordant
// pairs and several levels, that the interval holds ½ exactly when the
// exact McNemar p is above the level, and that the lower bound is where the
// upper binomial tail is half the level.
func TestShareIsTheTestsDual(t *testing.T) {
	for d := 1; d <= 60; d++ {
		for b := 0; b <= d; b++ {
			for _, alpha := range []float64{0.05, 0.01, 0.0025, 0.05 / 7} {
				iv := Share(b, d-b, alpha)
				p, _ := McNemar(b, d-b)
				require.Equal(t, p > alpha, iv.Contains(0.5), "b=%d c=%d α=%v %+v", b, d-b, alpha, iv)
				if b > 0 {
					tail := 1 - distuv.Binomial{N: float64(d), P: iv.Lo}.CDF(float64(b-1))
					require.InDelta(t, alpha/2, tail, 1e-9)
				}
			}
		}
	}
}

func TestMcNemarKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		b, c    int
		p, midP float64
	}{
		{8, 2, 0.10938, 0.06543},
		{6, 0, 0.03125, math.NaN()},
		{5, 0, 0.0625, math.NaN()},
		{15, 5, 0.04139, math.NaN()},
		{9, 0, 0.00391, math.NaN()},
		{0, 0, 1, 1},
		// b = c: p is 1, and so is the mid-p, 2·P(X ≤ k) − P(X = k) = 1
		// (not 1 − P(X = k)).
		{4, 4, 1, 1},
		{1, 1, 1, 1},
		// Fagerland et al. (2014): exact p 0.0703, mid-p 0.0391 for the
		// airway table; 0.0525 and 0.0347 for the complete response table.
		{1, 7, 0.07031, 0.03906},
		{6, 16, 0.05248, 0.03469},
	} {
		t.Run(fmt.Sprintf("%d,%d", tc.b, tc.c), func(t *testing.T) {
			p, mid := McNemar(tc.b, tc.c)
			assert.Equal(t, tc.p, math.Round(p*1e5)/1e5, "p")
			if !math.IsNaN(tc.midP) {
				assert.Equal(t, tc.midP, math.Round(mid*1e5)/1e5, "mid-p")
			}
			assert.LessOrEqual(t, mid, p, "mid-p is never above p")
			pr, midr := McNemar(tc.c, tc.b)
			assert.Equal(t, p, pr, "p is symmetric")
			assert.Equal(t, mid, midr, "mid-p is symmetric")
		})
	}
	// Worked example: 7 both-correct pairs, all faster.
	assert.Equal(t, 0.0156, round4(SignTest(7, 0)))
}

func TestHolm(t *testing.T) {
	adj := Holm([]float64{0.01, 0.04, 0.03, 0.005})
	// Sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → 0.06.
	assert.InDeltaSlice(t, []float64{0.03, 0.06, 0.06, 0.02}, adj, 1e-12)
	assert.Equal(t, []float64{1, 1}, Holm([]float64{0.7, 0.9}))
	assert.Empty(t, Holm(nil))
}

func TestHolmMonotoneInOwnP(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		ps := make([]float64, 1+r.IntN(6))
		for i := range ps {
			ps[i] = r.Float64()
		}
		before := Holm(ps)
		i := r.IntN(len(ps))
		ps[i] *= r.Float64()
		after := Holm(ps)
		require.LessOrEqual(t, after[i], before[i], "lowering p %d cannot raise its adjusted p", i)
		for j := range ps {
			require.GreaterOrEqual(t, after[j], ps[j]-1e-15, "adjusted p is never below raw")
		}
	}
}

func TestMinSignPAndRejectProb(t *testing.T) {
	assert.Equal(t, 1.0, MinSignP(0))
	assert.Equal(t, 1.0, MinSignP(1))
	assert.Equal(t, 0.0625, MinSignP(5))
	assert.Equal(t, 0.03125, MinSignP(6))
	assert.Equal(t, 0.0, RejectProb(5, 0.05), "5 pairs can never reach .05")
	assert.InDelta(t, 0.03125, RejectProb(6, 0.05), 1e-12, "only 6–0 or 0–6")
	// n = 10: reject at min ≤ 1 (p = .0215), not at 2 (p = .109).
	assert.InDelta(t, 2*11.0/1024, RejectProb(10, 0.05), 1e-12)
	for n := range 200 {
		q := RejectProb(n, 0.05)
		assert.LessOrEqual(t, q, 0.05, "an exact test never exceeds its level (n=%d)", n)
	}
}

func TestCriticalAgreesWithSignTest(t *testing.T) {
	for n := range 300 {
		k := critical(n, 0.05)
		for m := 0; m <= n/2; m++ {
			assert.Equal(t, m < k, SignTest(m, n-m) <= 0.05, "n=%d min=%d", n, m)
		}
	}
}

func TestMcNemarPower(t *testing.T) {
	// The figures docs/statistics.md quotes: 25% vs 5% needs about 60
	// pairs for 80% power, 40% vs 0% about 18.
	for _, tc := range []struct {
		n      int
		pb, pc float64
		want   float64
	}{
		{60, 0.25, 0.05, 0.797},
		{62, 0.25, 0.05, 0.813},
		{17, 0.40, 0, 0.736},
		{18, 0.40, 0, 0.791},
		{20, 0.40, 0, 0.874},
		{10, 0.25, 0.05, 0.015},
		{30, 0.15, 0.05, 0.099},
	} {
		assert.InDelta(t, tc.want, McNemarPower(tc.n, tc.pb, tc.pc, 0.05), 0.0005, "n=%d pb=%v pc=%v", tc.n, tc.pb, tc.pc)
	}
	assert.Equal(t, 0.0, McNemarPower(5, 0.5, 0, 0.05), "5 pairs can never reach .05")
	// With no effect the power is the test's size, at most alpha.
	for _, n := range []int{10, 30, 60} {
		assert.LessOrEqual(t, McNemarPower(n, 0.1, 0.1, 0.05), 0.05)
	}
}
