package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"sync"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/stats"
)

// looked is one simulated run under a group-sequential design: the report
// it ended with and the share of its planned pairs it ran.
type looked struct {
	report *report.Report
	used   float64
}

// runLooks simulates one run of sc as pairbench takes its looks: planned
// as runner.NewPlan plans it with design d, already taken for the plan
// (stats.Design.ForPlan; rundir.LookPairs: a look that could tell nothing
// is left out), its pairs drawn whole, and decided
// by the runner's own stopping logic (rundir.Looker, what the runner, a
// resume and merge run), which reports it at the look it stops at. A plan
// left with one look is the fixed design.
func runLooks(sc scenario, d *stats.Design, rng *rand.Rand) looked {
	sp, rows := sc.run(rng)
	plan := lookPlan(sp, sc.intents, sc.pairs, d)
	l := rundir.NewLooker(plan)
	for i := range rows {
		l.Add(&rows[i])
	}
	stop := l.Decide()
	if stop == nil {
		panic("every pair is done: the last look always stops")
	}
	return looked{l.Report(), float64(stop.Pairs) / float64(sc.pairs)}
}

// lookPlan is the run.json of sp at pairs pairs per intent of intents,
// planned under d, as the runner writes it: its looks and their rules,
// and each intent's pairs in alternating order.
func lookPlan(sp report.Plan, intents, pairs int, d *stats.Design) *rundir.Plan {
	plan := &rundir.Plan{V: rundir.PlanVersion, RunID: sp.RunID, Alpha: stats.DefaultAlpha, Model: rundir.Model{Provider: "sim", ID: "sim"},
		Looks: rundir.LookPairs(d, pairs, intents, stats.DefaultAlpha)}
	if plan.Looks != nil {
		plan.Futility, plan.FutilityPower, plan.Curtail, plan.FutilityOnly = d.Futility, d.FutilityPower, d.Curtail, d.FutilityOnly
	}
	for _, in := range sp.Intents {
		pi := rundir.PlannedIntent{ID: in.ID, Domain: in.Domain, Class: in.Class, Tools: in.Tools}
		for p := range pairs {
			pi.Pairs = append(pi.Pairs, rundir.PlannedPair{Pair: p, Order: [2]pairbench.Order{pairbench.AB, pairbench.BA}[p%2]})
		}
		plan.Intents = append(plan.Intents, pi)
	}
	return plan
}

// looksRate runs sc reps times under d and returns the share of runs for
// which hit holds of the report they ended with, and the mean share of the
// planned pairs they ran.
func looksRate(sc scenario, d *stats.Design, reps int, seed uint64, hit func(*report.Report) bool) (rate, used float64) {
	rng := rand.New(rand.NewPCG(seed, uint64(sc.intents)<<20|uint64(sc.pairs)))
	pd := d.ForPlan(sc.intents, sc.pairs, stats.DefaultAlpha)
	n := 0
	for range reps {
		l := runLooks(sc, &pd, rng)
		if hit(l.report) {
			n++
		}
		used += l.used
	}
	return float64(n) / float64(reps), used / float64(reps)
}

// designNote says what design the tables simulate.
func designNote(w io.Writer, runs int) stats.Design {
	d := stats.DefaultDesign()
	fmt.Fprintf(w, "Looks at ⅓, ⅔ and all of the planned pairs, O'Brien–Fleming-type spending (levels")
	for k := range d.Looks {
		fmt.Fprintf(w, " %.4f", d.LookAlpha(0.05, k))
	}
	fmt.Fprintf(w, ", a blind look's α carried to the next), futility when both pooled p are above the bound at which conditional power falls below %g (p >", d.FutilityPower)
	for k := range d.Looks[:len(d.Looks)-1] {
		fmt.Fprintf(w, " %.2f", d.FutilityAt(0.05, k))
	}
	fmt.Fprintf(w, " with no blind look), or when no claim can be reached at a later look whatever the pairs still to run (curtailment); a plan with less than %.0f%% power for a %g× speedup in one look (stats.VerdictPower; %.0f%% with one intent) takes futility-only looks, the last at the whole α, with bounds at conditional power %g (%g with one intent); decided by rundir.Looker; %d runs a cell.\n\n", 100*stats.LowPowerBelow, stats.PlanningSpeedup, 100*stats.LowPowerBelowOne, d.LowPower, d.LowPowerOne, runs)
	return d
}

// looksTable prints, for the default design, false claims and expected
// pairs with no effect, and power and expected pairs under effects,
// beside the fixed design's power (which runs every pair: 1.00).
func looksTable(w io.Writer, runs int) {
	d := designNote(w, runs)
	fmt.Fprintln(w, "| scenario | intents × pairs | looks at | any claim (looks) | verdict reached: looks | verdict reached: fixed | expected pairs, share of fixed |")
	fmt.Fprintln(w, "|---|---|---|--:|--:|--:|--:|")
	for _, c := range looksCells {
		claim, used := looksRate(c.sc, &d, runs, 6, claims)
		power, _ := looksRate(c.sc, &d, runs, 6, c.hit)
		fixed := rate(c.sc, runs, 6, c.hit)
		pd := d.ForPlan(c.sc.intents, c.sc.pairs, stats.DefaultAlpha)
		at := joinInts(rundir.LookPairs(&pd, c.sc.pairs, c.sc.intents, stats.DefaultAlpha), ", ")
		if pd.FutilityOnly {
			at += " (futility only)"
		}
		if at == "" {
			at = "all (one look)"
		}
		fmt.Fprintf(w, "| %s | %d × %d | %s | %.3f | %.3f | %.3f | %.2f |\n", c.name, c.sc.intents, c.sc.pairs, at, claim, power, fixed, used)
	}
}

var looksCells = []struct {
	name string
	sc   scenario
	hit  func(*report.Report) bool
}{
	{"no effect (90% correct)", scenario{intents: 10, pairs: 12, pc: 0.9, pt: 0.9, speedup: 1}, claims},
	{"no effect (60% correct)", scenario{intents: 3, pairs: 30, pc: 0.6, pt: 0.6, speedup: 1}, claims},
	{"no effect (90% correct)", scenario{intents: 1, pairs: 60, pc: 0.9, pt: 0.9, speedup: 1}, claims},
	{"1.5× faster", scenario{intents: 10, pairs: 12, pc: 0.9, pt: 0.9, speedup: 1.5}, verdictIs(pairbench.Faster, pairbench.Better)},
	{"1.5× faster", scenario{intents: 3, pairs: 20, pc: 0.9, pt: 0.9, speedup: 1.5}, verdictIs(pairbench.Faster, pairbench.Better)},
	{"1.2× faster", scenario{intents: 10, pairs: 30, pc: 0.9, pt: 0.9, speedup: 1.2}, verdictIs(pairbench.Faster, pairbench.Better)},
	{"+20 pp (70% → 90%)", scenario{intents: 10, pairs: 24, pc: 0.7, pt: 0.9, speedup: 1}, verdictIs(pairbench.MoreAccurate, pairbench.Better)},
}

// aaLooksTable prints, over the A/A grid, the share of A/A runs with any
// false claim when runs take their looks, and the share of the planned
// pairs they run.
func aaLooksTable(w io.Writer, runs int) {
	d := designNote(w, runs)
	fmt.Fprintln(w, "A/A runs with any false claim (verdict or any intent's label) / expected pairs as a share of the fixed design's; accuracy 60% and 90% alternating.")
	fmt.Fprintln(w)
	var mu sync.Mutex
	worst, most := 0.0, 0.0
	grid(w, aaIntents, aaPairs, func(k, n int) string {
		r, used := aaLooksRate(k, n, &d, runs)
		mu.Lock()
		defer mu.Unlock()
		worst, most = max(worst, r), max(most, used)
		return fmt.Sprintf("%.3f / %.2f", r, used)
	})
	fmt.Fprintf(w, "\nHighest false-claim rate: %.3f; highest share of pairs: %.2f.\n", worst, most)
}

// The grid of looksPowerTable: plans small enough that a 1.5× speedup is
// not always found.
var (
	powerGridIntents = []int{1, 2, 3, 5, 10}
	powerGridPairs   = []int{6, 8, 10, 15, 20, 30}
)

// looksPowerTable prints, over plans of 1–10 intents and 6–30 pairs with
// a broad 1.5× speedup (90% correct in both arms), how often the verdict
// is faster (or better) with looks and with the fixed design, and the
// pairs the runs with looks ran as a share of the fixed design's.
func looksPowerTable(w io.Writer, runs int) {
	d := designNote(w, runs)
	fmt.Fprintln(w, "Treatment 1.5× faster in every intent, 90% correct in both arms: verdict faster or better with looks / with the fixed design (every pair, at α) / expected pairs with looks as a share of the fixed design's.")
	fmt.Fprintln(w)
	var mu sync.Mutex
	worstLoss, most := 0.0, 0.0
	grid(w, powerGridIntents, powerGridPairs, func(k, n int) string {
		looks, fixed, used := looksPower(scenario{intents: k, pairs: n, pc: 0.9, pt: 0.9, speedup: 1.5}, &d, runs)
		mu.Lock()
		defer mu.Unlock()
		worstLoss, most = max(worstLoss, fixed-looks), max(most, used)
		return fmt.Sprintf("%.2f / %.2f / %.2f", looks, fixed, used)
	})
	fmt.Fprintf(w, "\nLargest loss of power to the looks: %.2f; highest share of pairs: %.2f.\n", worstLoss, most)
}

// looksPower is the share of runs of sc whose verdict is faster or
// better with looks by d and with the fixed design, and the mean share
// of the planned pairs the runs with looks ran.
func looksPower(sc scenario, d *stats.Design, runs int) (looks, fixed, used float64) {
	hit := verdictIs(pairbench.Faster, pairbench.Better)
	looks, used = looksRate(sc, d, runs, 10, hit)
	return looks, rate(sc, runs, 10, hit), used
}

// aaLooksRate is aaRate for runs that take their looks by d, with the
// mean share of the planned pairs they run.
func aaLooksRate(k, n int, d *stats.Design, runs int) (rate, used float64) {
	half := runs / 2
	hi, uh := looksRate(scenario{intents: k, pairs: n, pc: 0.9, pt: 0.9, speedup: 1}, d, half, 1, claims)
	lo, ul := looksRate(scenario{intents: k, pairs: n, pc: 0.6, pt: 0.6, speedup: 1}, d, runs-half, 2, claims)
	w := func(a, b float64) float64 { return (a*float64(half) + b*float64(runs-half)) / float64(runs) }
	return w(hi, lo), w(uh, ul)
}

// runTopUp simulates one run of sc that takes its looks by d (already
// taken for the plan, stats.Design.ForPlan) and, when it
// stopped claiming nothing, is topped up (rundir.Plan.TopUp, as a resume
// with more pairs and /bench more do) to twice its pairs and decided
// again from the looks after its stop: the policy that spends the most α a
// user can, topping up every inconclusive run. It returns whether the run
// claimed anything, before or after the top-up, and the pairs it ran by
// its first stop and in all, as shares of its first plan's.
func runTopUp(sc scenario, d *stats.Design, rng *rand.Rand) (claimed bool, first, used float64) {
	long := sc
	long.pairs = 2 * sc.pairs
	sp, rows := long.run(rng)
	plan := lookPlan(sp, sc.intents, sc.pairs, d)
	decide := func(plan *rundir.Plan) *rundir.LookStop {
		l := rundir.NewLooker(plan)
		for i := range rows {
			if rows[i].Pair < plan.PairsPerIntent() {
				l.Add(&rows[i])
			}
		}
		return l.Decide()
	}
	plan.Stop = decide(plan)
	first = float64(plan.Stop.Pairs) / float64(sc.pairs)
	if plan.Stop.Claimed {
		return true, first, first
	}
	more, err := plan.TopUp(long.pairs)
	if err != nil {
		panic(err)
	}
	// The pairs TopUp plans past the first plan's take its balanced orders;
	// the simulated rows alternate, as the runner's rows would follow the
	// plan: give the rows the plan's orders.
	for _, in := range more.Intents {
		for _, pp := range in.Pairs {
			for i := range rows {
				if rows[i].Intent == in.ID && rows[i].Pair == pp.Pair {
					rows[i].Order = pp.Order
				}
			}
		}
	}
	stop := decide(more)
	return stop.Claimed, first, float64(stop.Pairs) / float64(sc.pairs)
}

// topUpTable prints, for A/A runs, the share with any false claim when
// every run that stopped claiming nothing is topped up to twice its pairs,
// beside the share without top-ups.
func topUpTable(w io.Writer, runs int) {
	d := designNote(w, runs)
	fmt.Fprintln(w, "A/A runs: any false claim without a top-up, and when every run that stopped claiming nothing is topped up to twice its pairs (rundir.Plan.TopUp), with the pairs run as a share of the first plan's.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| intents × pairs (topped up to) | accuracy | any claim, no top-up | any claim, topped up | pairs run, share of the first plan |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|")
	for _, c := range []scenario{
		{intents: 10, pairs: 12, pc: 0.9, pt: 0.9, speedup: 1},
		{intents: 10, pairs: 12, pc: 0.6, pt: 0.6, speedup: 1},
		{intents: 3, pairs: 30, pc: 0.6, pt: 0.6, speedup: 1},
		{intents: 2, pairs: 10, pc: 0.9, pt: 0.9, speedup: 1},
		{intents: 1, pairs: 60, pc: 0.9, pt: 0.9, speedup: 1},
	} {
		plain, _ := looksRate(c, &d, runs, 9, claims)
		rng := rand.New(rand.NewPCG(9, uint64(c.intents)<<20|uint64(c.pairs)))
		pd := d.ForPlan(c.intents, c.pairs, stats.DefaultAlpha)
		n, used := 0, 0.0
		for range runs {
			claimed, _, u := runTopUp(c, &pd, rng)
			if claimed {
				n++
			}
			used += u
		}
		fmt.Fprintf(w, "| %d × %d (%d) | %.0f%% | %.3f | %.3f | %.2f |\n", c.intents, c.pairs, 2*c.pairs, 100*c.pc, plain, float64(n)/float64(runs), used/float64(runs))
	}
}
