package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

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

func TestNewcombeKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		a, b, c, d    int
		theta, lo, hi float64
	}{
		{1, 1, 7, 12, -0.2857, -0.5069, -0.0256},
		{59, 6, 16, 80, -0.0621, -0.1186, -0.0046},
		{10, 15, 5, 20, 0.2000, 0.0258, 0.3569},
		{20, 8, 2, 10, 0.1500, -0.0062, 0.2948},
		{5, 0, 0, 5, 0, -0.1666, 0.1666},
		// The predecessor's worked example, paired.
		{7, 2, 0, 1, 0.2000, -0.1353, 0.5024},
	} {
		t.Run(fmt.Sprintf("%d,%d,%d,%d", tc.a, tc.b, tc.c, tc.d), func(t *testing.T) {
			iv := Newcombe(Table{tc.a, tc.b, tc.c, tc.d}, z95)
			assert.Equal(t, tc.theta, round4(iv.Est), "theta")
			assert.Equal(t, tc.lo, round4(iv.Lo), "lower bound")
			assert.Equal(t, tc.hi, round4(iv.Hi), "upper bound")
		})
	}
}

func TestCorrectedPhi(t *testing.T) {
	// A = ad − bc = 5·5 − 0 = 25 > N/2 = 5: (25 − 5)/√(5·5·5·5) = 0.8.
	assert.InDelta(t, 0.8, correctedPhi(5, 0, 0, 5), 1e-12)
	// 0 ≤ A ≤ N/2 gives 0.
	assert.Equal(t, 0.0, correctedPhi(1, 1, 1, 2))
	// A < 0 is not corrected: (0 − 1)/√(1·1·1·1) = −1.
	assert.InDelta(t, -1, correctedPhi(0, 1, 1, 0), 1e-12)
	// A zero margin gives 0.
	assert.Equal(t, 0.0, correctedPhi(3, 0, 2, 0))
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
		{4, 4, 1, 1},
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
