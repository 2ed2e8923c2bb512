package main

import (
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/stats"
)

// slack is three standard errors of a simulated rate p over n runs.
func slack(p float64, n int) float64 { return 3 * math.Sqrt(p*(1-p)/float64(n)) }

// TestAAFalseClaimsPerRun: with both arms alike, a run makes any claim (its
// verdict or any intent's label, speed and accuracy together) in at most α
// of runs, from 1 to 30 intents and 5 to 100 pairs. The full grid is
// go run ./cmd/verdictsim aa.
func TestAAFalseClaimsPerRun(t *testing.T) {
	const runs = 200
	cells := []struct{ intents, pairs int }{{1, 6}, {1, 100}, {2, 10}, {5, 20}, {10, 5}, {10, 30}, {30, 8}}
	total := 0.0
	for _, c := range cells {
		r := aaRate(c.intents, c.pairs, runs)
		t.Logf("%d intents × %d pairs: %.3f of A/A runs with a false claim", c.intents, c.pairs, r)
		assert.LessOrEqual(t, r, 0.05+slack(0.05, runs), "%d intents × %d pairs", c.intents, c.pairs)
		total += r
	}
	n := runs * len(cells)
	assert.LessOrEqual(t, total/float64(len(cells)), 0.05+slack(0.05, n), "over every cell")
}

// TestBiasedScenarioGivesNoSlowerLabel: treatment 20 points more accurate
// and no slower, failures being the slow trials. The speed test over
// both-correct pairs alone finds treatment slower in many intents; the
// labels and the verdict say slower or mixed at most α of the time.
func TestBiasedScenarioGivesNoSlowerLabel(t *testing.T) {
	const runs = 60
	sc := scenario{intents: 10, pairs: 100, pc: 0.7, pt: 0.9, speedup: 1, struggle: true}
	intents, verdict, alone := biased(sc, runs)
	t.Logf("intents slower or mixed %.3f, verdicts %.3f, both-correct test alone slower %.3f", intents, verdict, alone)
	assert.Greater(t, alone, 0.2, "the scenario is biased: the both-correct test alone finds treatment slower")
	assert.LessOrEqual(t, intents, 0.05)
	assert.LessOrEqual(t, verdict, 0.05+slack(0.05, runs))
}

// TestPowerTargets: over 10 intents with the same effect, 5 pairs per
// intent give the verdict faster (or better) for a 1.5× speedup at least
// 80% of the time, and 10 pairs give more accurate (or better) for +20 pp
// (70% → 90%). The full table is go run ./cmd/verdictsim power.
func TestPowerTargets(t *testing.T) {
	const runs = 200
	speed := rate(scenario{intents: 10, pairs: 5, pc: 0.9, pt: 0.9, speedup: 1.5}, runs, 3, verdictIs(pairbench.Faster, pairbench.Better))
	acc := rate(scenario{intents: 10, pairs: 10, pc: 0.7, pt: 0.9, speedup: 1}, runs, 3, verdictIs(pairbench.MoreAccurate, pairbench.Better))
	t.Logf("power: 1.5× at 5 pairs %.3f, +20 pp at 10 pairs %.3f", speed, acc)
	assert.GreaterOrEqual(t, speed, 0.8)
	assert.GreaterOrEqual(t, acc, 0.8)
}

// TestClaimsCountsVerdictAndIntents: the A/A count is not vacuous.
func TestClaimsCountsVerdictAndIntents(t *testing.T) {
	assert.True(t, claims(&report.Report{Verdict: pairbench.Faster}))
	assert.True(t, claims(&report.Report{Verdict: pairbench.NoSignal, Intents: []report.Intent{{Label: pairbench.Slower}}}))
	assert.False(t, claims(&report.Report{Verdict: pairbench.NoSignal, Intents: []report.Intent{{Label: pairbench.Slower, Placebo: true}}}))
	assert.False(t, claims(&report.Report{Verdict: pairbench.Inconclusive}))
}

// TestAutoPairsDeliver: the pairs --pairs auto picks for a broad 1.5× and
// a broad +20 pp over 10 intents give the verdict with at least 80% power
// when the runs are simulated through report.Build.
func TestAutoPairsDeliver(t *testing.T) {
	const runs = 200
	speed, err := stats.AutoPairs(10, 0.05, stats.Effect{Speedup: 1.5})
	assert.NoError(t, err)
	gain, err := stats.AutoPairs(10, 0.05, stats.Effect{Accuracy: 0.2})
	assert.NoError(t, err)
	ps := rate(scenario{intents: 10, pairs: speed, pc: 0.9, pt: 0.9, speedup: 1.5}, runs, 5, verdictIs(pairbench.Faster, pairbench.Better))
	pa := rate(scenario{intents: 10, pairs: gain, pc: 0.7, pt: 0.9, speedup: 1}, runs, 5, verdictIs(pairbench.MoreAccurate, pairbench.Better))
	t.Logf("auto: %d pairs for 1.5× (power %.3f), %d for +20 pp (power %.3f)", speed, ps, gain, pa)
	assert.GreaterOrEqual(t, ps, 0.8-slack(0.8, runs))
	assert.GreaterOrEqual(t, pa, 0.8-slack(0.8, runs))
}

// TestLooks: runs that take their looks by the default design, decided by
// the runner's stopping logic (rundir.Looker): with no effect they make a
// false claim (over every look) at most α of the time and run at most 0.7
// of the planned pairs on average; under an effect they run at most 0.9 of
// the fixed design's pairs, reaching the verdict a little less often: the
// last look decides at the α the earlier looks leave (0.0336 of 0.05 in
// the default design), the union bound's price, and futility stops some
// runs that would have gone on to a verdict (docs/statistics.md, Looks).
// The full tables are go run ./cmd/verdictsim looks, aa-looks and
// looks-power.
func TestLooks(t *testing.T) {
	const runs = 150
	d := stats.DefaultDesign()
	for _, c := range []scenario{
		{intents: 10, pairs: 12, pc: 0.9, pt: 0.9, speedup: 1},
		{intents: 2, pairs: 30, pc: 0.6, pt: 0.6, speedup: 1},
	} {
		claim, used := looksRate(c, &d, runs, 8, claims)
		t.Logf("no effect, %d × %d: false claims %.3f, pairs used %.2f", c.intents, c.pairs, claim, used)
		assert.LessOrEqual(t, claim, 0.05+slack(0.05, runs))
		assert.LessOrEqual(t, used, 0.7)
	}
	for _, sc := range []scenario{
		{intents: 10, pairs: 12, pc: 0.9, pt: 0.9, speedup: 1.5},
		{intents: 3, pairs: 20, pc: 0.9, pt: 0.9, speedup: 1.5},
	} {
		hit := verdictIs(pairbench.Faster, pairbench.Better)
		power, used := looksRate(sc, &d, runs, 8, hit)
		fixed := rate(sc, runs, 8, hit)
		t.Logf("1.5×, %d × %d: verdict %.3f with looks, %.3f fixed; pairs used %.2f", sc.intents, sc.pairs, power, fixed, used)
		assert.LessOrEqual(t, used, 0.9)
		assert.GreaterOrEqual(t, power, fixed-0.1, "power lost to the looks")
	}
}

// TestLooksTargetsOverTheGrid: the targets of issue 31 for runs that take
// their looks, on cells of the A/A grid (go run ./cmd/verdictsim
// aa-looks) that include the small plans the first look of the design
// used to leave out (1 intent at 8–30 pairs, 2 at 5, 3 and 5 at 6), one
// intent at 6 pairs (whose looks only curtailment makes worth taking), and
// the largest: with no effect, at most α of runs make any false claim and
// the runs take at most 0.7 of the fixed design's pairs; under a 1.5×
// speedup at most 0.9 of them, losing at most 0.1 of the fixed design's
// power in a plan that takes futility-only looks (stats.Design.ForPlan)
// and 0.15 in any (go run ./cmd/verdictsim looks-power). With -short, a
// few cells.
func TestLooksTargetsOverTheGrid(t *testing.T) {
	const runs = 150
	d := stats.DefaultDesign()
	null := [][2]int{{1, 6}, {1, 8}, {1, 10}, {2, 5}, {5, 6}}
	effect := [][2]int{{1, 15}, {3, 8}}
	if !testing.Short() {
		null = append(null, [][2]int{{1, 15}, {1, 20}, {1, 30}, {1, 100}, {3, 6}, {2, 15}, {5, 8}, {10, 100}, {20, 30}, {30, 8}, {30, 30}}...)
		effect = append(effect, [][2]int{{1, 10}, {1, 20}, {1, 30}, {2, 10}, {5, 5}, {5, 8}, {10, 6}}...)
	}
	for _, c := range null {
		claim, used := aaLooksRate(c[0], c[1], &d, runs)
		t.Logf("A/A, %d × %d: false claims %.3f, pairs used %.3f", c[0], c[1], claim, used)
		assert.LessOrEqual(t, claim, 0.05+slack(0.05, runs), "%d × %d", c[0], c[1])
		assert.LessOrEqual(t, used, 0.7, "%d × %d: expected pairs with no effect", c[0], c[1])
	}
	// Under the effect, the runs of the looks-power table's cells (300, its
	// seeds), so the bound checked is the one the table shows.
	for _, c := range effect {
		looks, fixed, used := looksPower(scenario{intents: c[0], pairs: c[1], pc: 0.9, pt: 0.9, speedup: 1.5}, &d, 300)
		t.Logf("1.5×, %d × %d: verdict %.3f with looks, %.3f fixed; pairs used %.3f", c[0], c[1], looks, fixed, used)
		assert.LessOrEqual(t, used, 0.9, "%d × %d: expected pairs under the effect", c[0], c[1])
		bound := 0.15
		if pd := d.ForPlan(c[0], c[1], stats.DefaultAlpha); pd.FutilityOnly {
			bound = 0.1
		}
		assert.GreaterOrEqual(t, looks, fixed-bound, "%d × %d: power lost to the looks", c[0], c[1])
	}
}

// TestLooksLeaveOutBlindLooks: a plan that can reach no label at all (one
// intent at 5 pairs: 2·½⁵ > α), run anyway, runs every pair as the fixed
// design does; one intent at 6 pairs, whose looks at 2 and 4 pairs are
// blind and too few for conditional power, takes them for curtailment
// alone: the same claims as the fixed design (curtailment stops only runs
// that could claim nothing), on fewer pairs.
func TestLooksLeaveOutBlindLooks(t *testing.T) {
	d := stats.DefaultDesign()
	five := scenario{intents: 1, pairs: 5, pc: 0.9, pt: 0.9, speedup: 1}
	_, used := looksRate(five, &d, 50, 8, claims)
	assert.Equal(t, 1.0, used)
	for _, sc := range []scenario{
		{intents: 1, pairs: 6, pc: 0.9, pt: 0.9, speedup: 1},
		{intents: 1, pairs: 6, pc: 0.9, pt: 0.9, speedup: 3},
	} {
		claim, used := looksRate(sc, &d, 100, 8, claims)
		fixed := rate(sc, 100, 8, claims)
		assert.Equal(t, fixed, claim, "speedup %g: the same runs, the same claims", sc.speedup)
		assert.Less(t, used, 1.0, "speedup %g", sc.speedup)
	}
}

// TestTopUpSimulationTopsUpInconclusiveRuns: the top-up simulation drives
// rundir.Plan.TopUp: an A/A run that stopped claiming nothing goes on from
// the look after its stop and runs more pairs, and a run that claimed at
// its first stop is not topped up. The rates are go run
// ./cmd/verdictsim topup.
func TestTopUpSimulationTopsUpInconclusiveRuns(t *testing.T) {
	d := stats.DefaultDesign()
	sc := scenario{intents: 10, pairs: 12, pc: 0.9, pt: 0.9, speedup: 1}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10 {
		claimed, first, used := runTopUp(sc, &d, rng)
		if !claimed || first != used {
			assert.Greater(t, used, first, "topped up past its first stop")
		}
	}
	big := scenario{intents: 10, pairs: 12, pc: 0.9, pt: 0.9, speedup: 2}
	claimed, first, used := runTopUp(big, &d, rng)
	assert.True(t, claimed)
	assert.Equal(t, first, used, "a run that claimed is not topped up")
}

// TestDocsTablesNameTheirDesign: each table of runs with looks in
// docs/statistics.md opens with the line naming the design its command
// prints today, so a table left from another design fails here (the
// tables themselves take minutes: rerun the command in the marker).
func TestDocsTablesNameTheirDesign(t *testing.T) {
	doc, err := os.ReadFile("../../docs/statistics.md")
	require.NoError(t, err)
	for _, name := range []string{"looks", "aa-looks", "looks-power", "topup"} {
		m := regexp.MustCompile(`<!-- ` + name + ` table: go run ./cmd/verdictsim -runs (\d+) ` + name + ` -->\n(.*)\n`).FindStringSubmatch(string(doc))
		require.NotNil(t, m, "docs/statistics.md has no %s table", name)
		runs, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		var b strings.Builder
		designNote(&b, runs)
		assert.Equal(t, strings.TrimSpace(b.String()), m[2], "docs/statistics.md's %s table is stale: run go run ./cmd/verdictsim -runs %d %s", name, runs, name)
	}
}
