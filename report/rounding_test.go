package report

import (
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"

	"github.com/pairbench/pairbench/stats"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// printedInterval reads back the interval a rendering printed: its
// bounds and whether each is open.
var printedInterval = regexp.MustCompile(`([\[(])([0-9.]+)(?:–|, )([0-9.]+)%?([\])])$`)

func parsePrinted(t *testing.T, s string) (lo, hi float64, loOpen, hiOpen bool) {
	t.Helper()
	m := printedInterval.FindStringSubmatch(s)
	require.NotNil(t, m, "no interval in %q", s)
	lo, err := strconv.ParseFloat(m[2], 64)
	require.NoError(t, err)
	hi, err = strconv.ParseFloat(m[3], 64)
	require.NoError(t, err)
	return lo, hi, m[1] == "(", m[4] == ")"
}

func printedContains(lo, hi float64, loOpen, hiOpen bool, v float64) bool {
	return (v > lo || (v == lo && !loOpen)) && (v < hi || (v == hi && !hiOpen))
}

// TestPrintedIntervalsNeverContradictTheirTest prints intervals whose
// bounds sit a hair either side of no difference (1× for the speedup, ½
// for the discordant share) and checks that what is printed holds the
// interval (rounded outward) and holds no difference exactly when the
// interval does, which is when the label says no difference. Rounding to
// nearest printed "1.26× [1.00, 1.57]" for a test that rejected.
func TestPrintedIntervalsNeverContradictTheirTest(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 6))
	near := func(null, scale float64) float64 {
		return null + scale*(rng.Float64()-0.5)*0.02
	}
	for range 20_000 {
		e := stats.ExactInterval{Est: 1.26, Lo: near(1, 1), Hi: 1 + 2*rng.Float64(), LoOpen: rng.IntN(2) == 0, HiOpen: rng.IntN(2) == 0, Level: 0.95}
		if rng.IntN(2) == 0 {
			e.Lo, e.Hi = rng.Float64(), near(1, 1)
		}
		if e.Lo > e.Hi {
			continue
		}
		s := showExactSpeedup(e)
		lo, hi, lo0, hi0 := parsePrinted(t, s)
		require.LessOrEqual(t, lo, e.Lo, "%s rounds %v outward", s, e)
		require.GreaterOrEqual(t, hi, e.Hi, "%s rounds %v outward", s, e)
		require.Equal(t, e.Contains(1), printedContains(lo, hi, lo0, hi0, 1), "%s and %+v disagree about 1×", s, e)

		sh := stats.ExactInterval{Est: 0.7, Lo: near(0.5, 0.1), Hi: 0.5 + 0.5*rng.Float64(), LoOpen: true, HiOpen: true, Level: 0.95}
		if rng.IntN(2) == 0 {
			sh.Lo, sh.Hi = 0.5*rng.Float64(), near(0.5, 0.1)
		}
		if sh.Lo > sh.Hi {
			continue
		}
		s = showShare([2]int{7, 3}, sh)
		lo, hi, lo0, hi0 = parsePrinted(t, s)
		require.LessOrEqual(t, lo/100, sh.Lo+1e-12, "%s rounds %v outward", s, sh)
		require.GreaterOrEqual(t, hi/100, sh.Hi-1e-12, "%s rounds %v outward", s, sh)
		require.Equal(t, sh.Contains(0.5), printedContains(lo, hi, lo0, hi0, 50), "%s and %+v disagree about ½", s, sh)
	}
	// The example: a closed bound just above 1 printed as 1.00 is
	// printed open, so the printed interval still excludes 1.
	assert.Equal(t, "1.26× (1.00, 1.57]", showExactSpeedup(stats.ExactInterval{Est: 1.26, Lo: 1.003, Hi: 1.565, Level: 0.95}))
	assert.Equal(t, "7/10 70% [34–93%]", showRate(7, 10, stats.Interval{Est: 0.7, Lo: 0.3475, Hi: 0.9267}))
}

// TestReciprocalRatiosTie checks that a pair whose times are the other
// pair's swapped gives exactly the opposite log ratio, so the two tie in
// absolute value as docs/statistics.md says (their Walsh average is 0).
func TestReciprocalRatiosTie(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10_000 {
		c, tt := 1+100*rng.Float64(), 1+100*rng.Float64()
		require.Equal(t, stats.LogRatio(c, tt), -stats.LogRatio(tt, c), "log ratio of %v/%v", c, tt)
	}
	// Two pairs with swapped times: no evidence either way, p = 1, and the
	// speedup's estimate exactly 1.
	iv, p := stats.SignedRank([]float64{30, 7}, []float64{7, 30}, 0.05)
	assert.Equal(t, 1.0, p)
	assert.Equal(t, 1.0, iv.Est)
	assert.False(t, math.IsNaN(iv.Est))
}
