package main

import (
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/stats"
)

// looked is one simulated run under a group-sequential design: the report
// it ended with and the share of its planned pairs it ran.
type looked struct {
	report *stats.Report
	used   float64
}

// runLooks simulates one run of sc under design d at level alpha: the run's
// pairs are drawn whole, and look k sees the first LookPairs of each
// intent's, decided at LookAlpha; it ends at the first look that stops.
func runLooks(sc scenario, d stats.Design, alpha float64, rng *rand.Rand) looked {
	plan, rows := sc.run(rng)
	for k := range d.Looks {
		n := d.LookPairs(sc.pairs, k)
		p := plan
		p.Alpha = d.LookAlpha(alpha, k)
		p.Intents = append([]stats.PlanIntent(nil), plan.Intents...)
		for i := range p.Intents {
			p.Intents[i].Pairs = n
		}
		var sub []pairbench.Row
		for _, r := range rows {
			if r.Pair < n {
				sub = append(sub, r)
			}
		}
		rep := stats.Build(p, sub)
		if stop, _ := d.Stop(rep, k); stop {
			return looked{rep, float64(n) / float64(sc.pairs)}
		}
	}
	panic("the last look always stops")
}

// looksRate runs sc reps times under d and returns the share of runs for
// which hit holds of the report they ended with, and the mean share of the
// planned pairs they ran.
func looksRate(sc scenario, d stats.Design, reps int, seed uint64, hit func(*stats.Report) bool) (rate, used float64) {
	rng := rand.New(rand.NewPCG(seed, uint64(sc.intents)<<20|uint64(sc.pairs)))
	n := 0
	for range reps {
		l := runLooks(sc, d, 0.05, rng)
		if hit(l.report) {
			n++
		}
		used += l.used
	}
	return float64(n) / float64(reps), used / float64(reps)
}

// looksTable prints, for the default design, A/A false claims and expected
// pairs with no effect, and power and expected pairs under broad effects,
// beside the fixed design's power.
func looksTable(w io.Writer, runs int) {
	d := stats.DefaultDesign()
	fmt.Fprintf(w, "Looks at %v of the planned pairs, O'Brien–Fleming-type spending (levels", d.Looks)
	for k := range d.Looks {
		fmt.Fprintf(w, " %.4f", d.LookAlpha(0.05, k))
	}
	fmt.Fprintf(w, "), futility when both pooled p > %g; %d runs a cell.\n\n", d.Futility, runs)
	fmt.Fprintln(w, "| scenario | intents × pairs | any claim (looks) | verdict reached: looks | verdict reached: fixed | expected pairs, share of fixed |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|")
	for _, c := range looksCells {
		claim, used := looksRate(c.sc, d, runs, 6, claims)
		power, _ := looksRate(c.sc, d, runs, 6, c.hit)
		fixed := rate(c.sc, runs, 6, c.hit)
		fmt.Fprintf(w, "| %s | %d × %d | %.3f | %.3f | %.3f | %.2f |\n", c.name, c.sc.intents, c.sc.pairs, claim, power, fixed, used)
	}
}

var looksCells = []struct {
	name string
	sc   scenario
	hit  func(*stats.Report) bool
}{
	{"no effect (90% correct)", scenario{intents: 10, pairs: 12, pc: 0.9, pt: 0.9, speedup: 1}, claims},
	{"no effect (60% correct)", scenario{intents: 3, pairs: 30, pc: 0.6, pt: 0.6, speedup: 1}, claims},
	{"no effect (90% correct)", scenario{intents: 1, pairs: 60, pc: 0.9, pt: 0.9, speedup: 1}, claims},
	{"1.5× faster", scenario{intents: 10, pairs: 12, pc: 0.9, pt: 0.9, speedup: 1.5}, verdictIs(pairbench.Faster, pairbench.Better)},
	{"1.2× faster", scenario{intents: 10, pairs: 30, pc: 0.9, pt: 0.9, speedup: 1.2}, verdictIs(pairbench.Faster, pairbench.Better)},
	{"+20 pp (70% → 90%)", scenario{intents: 10, pairs: 24, pc: 0.7, pt: 0.9, speedup: 1}, verdictIs(pairbench.MoreAccurate, pairbench.Better)},
}
