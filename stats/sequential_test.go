package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"
)

// TestSpendingAddsUpToAlpha: the default design's looks spend, O'Brien–
// Fleming type, 2 − 2Φ(1.96/√t): 0.00069 by a third, 0.0164 by two thirds (erfc, computed apart),
// and every look's share adds up to α exactly.
func TestSpendingAddsUpToAlpha(t *testing.T) {
	d := DefaultDesign()
	require.NoError(t, d.Check())
	assert.InDelta(t, 0.00068689, Spent(0.05, 1.0/3), 1e-8) // erfc(1.959964·√3/√2)
	assert.InDelta(t, 0.01637467, Spent(0.05, 2.0/3), 1e-8) // erfc(1.959964·√1.5/√2)
	assert.Equal(t, 0.05, Spent(0.05, 1))
	sum := 0.0
	for k := range d.Looks {
		a := d.LookAlpha(0.05, k)
		assert.Positive(t, a)
		sum += a
	}
	assert.InDelta(t, 0.05, sum, 1e-15)
	// A single look is the fixed design.
	assert.Equal(t, 0.05, Design{Looks: []float64{1}}.LookAlpha(0.05, 0))
}

func TestDesignCheckAndLookPairs(t *testing.T) {
	for _, bad := range []Design{{}, {Looks: []float64{0.5}}, {Looks: []float64{0.6, 0.3, 1}}, {Looks: []float64{0, 1}}, {Looks: []float64{1}, Futility: 1}} {
		assert.Error(t, bad.Check(), "%+v", bad)
	}
	d := DefaultDesign()
	assert.Equal(t, []int{4, 8, 12}, []int{d.LookPairs(12, 0), d.LookPairs(12, 1), d.LookPairs(12, 2)})
	assert.Equal(t, []int{1, 2, 2}, []int{d.LookPairs(2, 0), d.LookPairs(2, 1), d.LookPairs(2, 2)})
}

// TestFutilityFromConditionalPower: the default design's futility bound at
// a look is the p at which a pooled test's conditional power, under the
// effect the last look detects with 80% power, is the design's 0.6,
// computed here from the formula of docs/statistics.md; a design of one
// bound keeps it at every look, and the last look has none.
func TestFutilityFromConditionalPower(t *testing.T) {
	d := DefaultDesign()
	N := distuv.UnitNormal
	c := N.Quantile(1 - d.LookAlpha(0.05, 2)/2)
	theta := c + N.Quantile(0.8)
	for k, want := range []float64{0.54, 0.12} {
		f := d.FutilityAt(0.05, k)
		assert.InDelta(t, want, f, 0.005, "look %d", k+1)
		z, tk := N.Quantile(1-f/2), d.Looks[k]
		cp := 1 - N.CDF((c-z*math.Sqrt(tk)-theta*(1-tk))/math.Sqrt(1-tk))
		assert.InDelta(t, DefaultFutilityPower, cp, 1e-9, "look %d: conditional power at the bound", k+1)
	}
	assert.Zero(t, d.FutilityAt(0.05, 2))
	assert.Equal(t, 0.2, Design{Looks: d.Looks, Futility: 0.2}.FutilityAt(0.05, 1))
	assert.Equal(t, 1.0, Design{Looks: []float64{0.05, 1}, FutilityPower: 0.6}.FutilityAt(0.05, 0), "too early to stop whatever the data")
}

// TestMarkBlind: a look at which the verdict cannot be reached spends no
// α: the next look spends from the last look that is not blind, so the
// levels of the looks that are not blind add up to α; looks passed keep
// theirs.
func TestMarkBlind(t *testing.T) {
	d := DefaultDesign()
	d.MarkBlind([]int{5, 10, 15}, 1, 0.05, 0)
	require.NoError(t, d.Check())
	assert.Equal(t, []bool{true, false, false}, d.Blind, "5 pairs of one intent give at best p 0.0625")
	assert.InDelta(t, Spent(0.05, 2.0/3), d.LookAlpha(0.05, 1), 1e-15, "the blind look's share carried")
	assert.InDelta(t, 0.05, d.LookAlpha(0.05, 1)+d.LookAlpha(0.05, 2), 1e-15)
	d.MarkBlind([]int{5, 10, 15}, 1, 0.05, 1)
	assert.Nil(t, d.Blind, "a look passed keeps its α spent")
	d.MarkBlind([]int{4, 8, 12}, 10, 0.05, 0)
	assert.Nil(t, d.Blind, "40 pairs reach α/3 of the first look's level")
	bad := DefaultDesign()
	bad.Blind = []bool{false, false, true}
	assert.Error(t, bad.Check(), "the last look is never blind")
}

// TestClaimReachableAtTheEdge: one intent's look whose two both-correct
// pairs split can no longer reach α = 0.05 with four pairs to come (the
// best is 5 of 6 pairs one way, the other the smallest: p 0.0625), so it
// must stop; two that agree can (6 of 6: p 0.03125), and so can any look
// with every pair still to come discordant one way enough times.
func TestClaimReachableAtTheEdge(t *testing.T) {
	split := NewRankSample([]float64{0.3, -0.2})
	agree := NewRankSample([]float64{0.3, 0.2})
	one := NewRankSample([]float64{0.3})
	assert.False(t, ClaimReachable([]ReachIntent{{Speed: &split, More: 4}}, 0.05), "split: no label within reach")
	assert.True(t, ClaimReachable([]ReachIntent{{Speed: &agree, More: 4}}, 0.05), "agreeing: 6 of 6 pairs reach 0.03125")
	assert.False(t, ClaimReachable([]ReachIntent{{Speed: &one, B: 1, More: 4}}, 0.05), "one both-correct and one discordant pair: 5 at most for either test")
	assert.True(t, ClaimReachable([]ReachIntent{{Speed: &one, B: 1, More: 5}}, 0.05), "6 discordant pairs one way reach 0.03125")
	assert.False(t, ClaimReachable([]ReachIntent{{Speed: &agree, More: 4}}, 0.03), "6 of 6 is above 0.03")
	assert.False(t, ClaimReachable(nil, 0.05), "nothing benched, nothing to claim")
	// Two intents: the pooled tests reach α/2 = 0.025 with 7 pairs one way.
	none := []ReachIntent{{More: 3}, {More: 3}}
	assert.False(t, ClaimReachable(none, 0.05), "6 pooled pairs: 2·½⁶ = 0.031 > 0.025")
	none[1].More = 4
	assert.True(t, ClaimReachable(none, 0.05), "7 pooled pairs: 0.016")
}

// TestClaimReachableAgainstEveryOutcome lists every outcome of the pairs
// still to run, for small looks drawn at random: each pair still to run
// neither correct, correct in one arm only, or both correct with a log
// ratio of either sign tying a ratio so far, between two, below all,
// beyond all or 0. With one intent, ClaimReachable says a claim is within
// reach exactly when some outcome's signed-rank or McNemar p reaches α
// (the bound is exact); with two, it says out of reach only when no
// outcome's pooled test reaches α/2 nor any intent's test α.
func TestClaimReachableAgainstEveryOutcome(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 6))
	const alpha = 0.05
	nulls := map[int]RankNull{}
	speedP := func(d []float64) float64 {
		if len(d) == 0 {
			return 1
		}
		if _, ok := nulls[len(d)]; !ok {
			nulls[len(d)] = NullFor(len(d))
		}
		return NewRankSample(d).P(nulls[len(d)])
	}
	seen := map[bool]int{}
	for trial := range 60 {
		k := 1 + trial%2
		looks := make([]look, k)
		var in []ReachIntent
		for i := range looks {
			looks[i] = randomLook(rng, 1+rng.IntN(4), 1+rng.IntN(4-k))
			var s *RankSample
			if len(looks[i].d) > 0 {
				rs := NewRankSample(looks[i].d)
				s = &rs
			}
			in = append(in, ReachIntent{Speed: s, B: looks[i].b, C: looks[i].c, More: looks[i].more})
		}
		got := ClaimReachable(in, alpha)
		seen[got]++
		outcomes := make([][]look, k)
		for i, l := range looks {
			outcomes[i] = l.outcomes()
		}
		found := false
		var walk func(i int, picked []look)
		walk = func(i int, picked []look) {
			if found {
				return
			}
			if i == k {
				var strata [][]float64
				b, c := 0, 0
				for _, l := range picked {
					p, _ := McNemar(l.b, l.c)
					if p <= alpha || speedP(l.d) <= alpha {
						found = true
					}
					strata = append(strata, l.d)
					b, c = b+l.b, c+l.c
				}
				if k > 1 {
					p, _ := McNemar(b, c)
					if p <= alpha/2 || VanElteren(strata).P <= alpha/2 {
						found = true
					}
				}
				return
			}
			for _, o := range outcomes[i] {
				walk(i+1, append(picked, o))
			}
		}
		walk(0, nil)
		if k == 1 {
			assert.Equal(t, found, got, "one intent %+v: some outcome reaches α %v, ClaimReachable %v", looks[0], found, got)
		} else if !got {
			assert.False(t, found, "two intents %+v: ClaimReachable says out of reach, but an outcome reaches a claim", looks)
		}
	}
	assert.Positive(t, seen[true], "some looks could still claim")
	assert.Positive(t, seen[false], "some could not")
}

// look is one intent at a look, for TestClaimReachableAgainstEveryOutcome.
type look struct {
	d          []float64
	b, c, more int
}

// randomLook draws n pairs so far, with more still to run.
func randomLook(rng *rand.Rand, n, more int) look {
	l := look{more: more}
	for range n {
		switch x := rng.IntN(10); {
		case x < 6:
			v := float64(1+rng.IntN(3)) / 10 // ties among the ratios
			if rng.IntN(2) == 0 {
				v = -v
			}
			if x == 0 {
				v = 0
			}
			l.d = append(l.d, v)
		case x < 8:
			l.b++
		case x < 9:
			l.c++
		}
	}
	return l
}

// outcomes lists every look l could end as, its more pairs run.
func (l look) outcomes() []look {
	cands := []float64{0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 0.7, 0.9}
	var kinds []func(look) look
	kinds = append(kinds, func(x look) look { return x }, // neither correct
		func(x look) look { x.b++; return x }, func(x look) look { x.c++; return x })
	for _, v := range cands {
		for _, s := range []float64{1, -1} {
			if v == 0 && s < 0 {
				continue
			}
			kinds = append(kinds, func(x look) look { x.d = append(slices.Clone(x.d), s*v); return x })
		}
	}
	out := []look{{d: l.d, b: l.b, c: l.c}}
	for range l.more {
		var next []look
		seen := map[string]bool{}
		for _, o := range out {
			for _, k := range kinds {
				x := k(o)
				key := fmt.Sprint(x.b, x.c, slices.Sorted(slices.Values(x.d)))
				if !seen[key] { // the same outcome in another order
					seen[key] = true
					next = append(next, x)
				}
			}
		}
		out = next
	}
	return out
}

// TestPooledBoundBindsOnlyOnTheLattice: ClaimReachable's bound on the
// pooled signed-rank test says out of reach only with fewer than
// 2·log₂(4/α) nonzero pairs in all, under 24 for any α ≥ 0.001. For every
// way of splitting up to 24 nonzero pairs into strata, the test's null
// distribution is computed exactly on its lattice (the bound holds for
// the exact distribution, not for an approximation of its tail).
func TestPooledBoundBindsOnlyOnTheLattice(t *testing.T) {
	require.Less(t, 2*math.Log2(4/0.001), 24.0)
	var split func(left, largest int, parts []int)
	count := 0
	split = func(left, largest int, parts []int) {
		if len(parts) > 0 {
			count++
			lcm, n := 1, 0
			for _, p := range parts {
				lcm = lcmBounded(lcm, p+1, 1<<20)
				n += p
			}
			require.Positive(t, lcm, "%v: the lattice is too fine", parts)
			// The lattice's sum is lcm·n (twice the mid-ranks of a stratum
			// of p pairs add up to p(p+1), each scaled by lcm/(p+1)).
			assert.LessOrEqual(t, float64(lcm*n)*float64(n), exactLatticeWork, "%v", parts)
		}
		for p := min(left, largest); p >= 1; p-- {
			split(left-p, p, append(parts, p))
		}
	}
	split(24, 24, nil)
	assert.Equal(t, 7337, count, "the partitions of 1 to 24")
}

// TestForPlanTakesFutilityOnlyLooksWhenLowPowered: a plan whose one-look
// design has less than 60% power for a 1.5× speedup under the planning
// model with one intent (at 15 pairs), 55% with more, takes futility-only
// looks at conditional power 0.5 (0.55 with two intents or more), and
// every look before its last is blind, so the last decides
// at the whole α; a plan with more (10 intents at 12 pairs) takes the
// design as it is; a design without LowPower is never changed.
func TestForPlanTakesFutilityOnlyLooksWhenLowPowered(t *testing.T) {
	d := DefaultDesign()
	require.NoError(t, d.Check())
	low, high := VerdictPower(1, 15, 0.05, PlanningSpeedup), VerdictPower(10, 12, 0.05, PlanningSpeedup)
	assert.Less(t, low, LowPowerBelowOne)
	assert.GreaterOrEqual(t, high, LowPowerBelow)
	assert.Zero(t, VerdictPower(1, 5, 0.05, PlanningSpeedup), "5 pairs of one intent reach no verdict")

	small := d.ForPlan(1, 15, 0.05)
	require.NoError(t, small.Check())
	assert.True(t, small.FutilityOnly)
	assert.Equal(t, DefaultLowPowerOne, small.FutilityPower, "one intent")
	assert.Zero(t, small.LowPower, "the plan records the design it took")
	assert.Zero(t, small.LowPowerOne)
	two := d.ForPlan(2, 10, 0.05)
	assert.True(t, two.FutilityOnly)
	assert.Equal(t, DefaultLowPower, two.FutilityPower, "two intents")
	assert.False(t, d.ForPlan(3, 8, 0.05).FutilityOnly, "three intents at 8 pairs: about 59%, above the line for two or more")
	assert.False(t, d.ForPlan(1, 20, 0.05).FutilityOnly, "one intent at 20 pairs: about 65%")
	assert.True(t, small.Curtail)
	small.MarkBlind([]int{5, 10, 15}, 1, 0.05, 0)
	assert.Equal(t, []bool{true, true, false}, small.Blind, "10 pairs could reach a verdict, but the look is futility-only")
	assert.Equal(t, 0.05, small.LookAlpha(0.05, 2))
	assert.Equal(t, MinSignP(10)/2, small.LevelAt(0.05, 1, 10), "a futility-only look decides at a level its pairs cannot reach")
	assert.Equal(t, 0.05, small.LevelAt(0.05, 2, 15))
	assert.Positive(t, small.LevelAt(0.05, 1, 5000), "never 0, which a report reads as the default α")
	assert.True(t, small.IsBlind(1))

	big := d.ForPlan(10, 12, 0.05)
	assert.False(t, big.FutilityOnly)
	assert.Equal(t, big.LookAlpha(0.05, 1), big.LevelAt(0.05, 1, 80))
	assert.Equal(t, DefaultFutilityPower, big.FutilityPower)
	assert.Zero(t, big.LowPower)

	plain := Design{Looks: d.Looks, FutilityPower: DefaultFutilityPower}
	assert.Equal(t, plain, plain.ForPlan(1, 15, 0.05))
}
