package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
)

// The A/A grid: numbers of intents and pairs per intent.
var (
	aaIntents = []int{1, 2, 3, 5, 10, 20, 30}
	aaPairs   = []int{5, 6, 8, 10, 15, 20, 30, 50, 100}
)

// aaTable prints, per number of intents and pairs, the share of A/A runs
// (both arms alike; accuracy 60% or 90% in both, alternating) with any
// claim: the verdict or any intent's label.
func aaTable(w io.Writer, runs int) {
	fmt.Fprintln(w, "A/A runs with any false claim (verdict or any intent's label), of", runs, "runs a cell; accuracy 60% and 90% alternating.")
	fmt.Fprintln(w)
	var mu sync.Mutex
	worst := 0.0
	grid(w, aaIntents, aaPairs, func(k, n int) string {
		r := aaRate(k, n, runs)
		mu.Lock()
		defer mu.Unlock()
		worst = max(worst, r)
		return fmt.Sprintf("%.3f", r)
	})
	fmt.Fprintf(w, "\nHighest: %.3f.\n", worst)
}

// grid prints a table of a cell for each number of intents (a row) and
// pairs per intent (a column). The cells are computed at once, as many at
// a time as GOMAXPROCS, so cell must be safe to call concurrently; each
// cell seeds its own runs, so the table is the same however they are
// scheduled.
func grid(w io.Writer, intents, pairs []int, cell func(intents, pairs int) string) {
	head := []string{"intents \\ pairs"}
	for _, n := range pairs {
		head = append(head, fmt.Sprint(n))
	}
	fmt.Fprintln(w, "| "+strings.Join(head, " | ")+" |")
	fmt.Fprintln(w, "|"+strings.Repeat("--:|", len(head)))
	rows := make([][]string, len(intents))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, k := range intents {
		rows[i] = make([]string, len(pairs))
		for j, n := range pairs {
			g.Go(func() error {
				rows[i][j] = cell(k, n)
				return nil
			})
		}
	}
	_ = g.Wait()
	for i, k := range intents {
		fmt.Fprintln(w, "| "+strings.Join(append([]string{fmt.Sprint(k)}, rows[i]...), " | ")+" |")
	}
}

// aaRate is the share of A/A runs of k intents × n pairs with any claim.
func aaRate(k, n, runs int) float64 {
	half := runs / 2
	hi := rate(scenario{intents: k, pairs: n, pc: 0.9, pt: 0.9, speedup: 1}, half, 1, claims)
	lo := rate(scenario{intents: k, pairs: n, pc: 0.6, pt: 0.6, speedup: 1}, runs-half, 2, claims)
	return (hi*float64(half) + lo*float64(runs-half)) / float64(runs)
}

// powerTable prints the power of the run's verdict for broad effects over
// ten intents, by pairs per intent, and the fewest pairs reaching 80%.
func powerTable(w io.Writer, runs int) {
	fmt.Fprintln(w, "Power of the run's verdict over 10 intents, every intent with the same effect, of", runs, "runs a cell.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| effect | verdict counted | "+joinInts(powerPairs, " | ")+" | pairs per intent for 80% |")
	fmt.Fprintln(w, "|---|---|"+strings.Repeat("--:|", len(powerPairs)+1))
	for _, e := range powerEffects {
		cells := []string{e.name, e.counted}
		need := "—"
		for _, n := range powerPairs {
			sc := e.sc
			sc.pairs = n
			p := rate(sc, runs, 3, e.hit)
			if p >= 0.8 && need == "—" {
				need = fmt.Sprint(n)
			}
			cells = append(cells, fmt.Sprintf("%.2f", p))
		}
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" | "+need+" |")
	}
}

var powerPairs = []int{2, 3, 4, 5, 6, 7, 8, 10, 12}

// powerEffects are the broad effects of the targets.
var powerEffects = []struct {
	name, counted string
	sc            scenario
	hit           func(*report.Report) bool
}{
	{"1.5× faster, 90% correct in both", "faster or better", scenario{intents: 10, pc: 0.9, pt: 0.9, speedup: 1.5},
		verdictIs(pairbench.Faster, pairbench.Better)},
	{"1.2× faster, 90% correct in both", "faster or better", scenario{intents: 10, pc: 0.9, pt: 0.9, speedup: 1.2},
		verdictIs(pairbench.Faster, pairbench.Better)},
	{"+20 pp (70% → 90%), same speed", "more accurate or better", scenario{intents: 10, pc: 0.7, pt: 0.9, speedup: 1},
		verdictIs(pairbench.MoreAccurate, pairbench.Better)},
	{"+20 pp (50% → 70%), same speed", "more accurate or better", scenario{intents: 10, pc: 0.5, pt: 0.7, speedup: 1},
		verdictIs(pairbench.MoreAccurate, pairbench.Better)},
}

func verdictIs(labels ...pairbench.Label) func(*report.Report) bool {
	return func(r *report.Report) bool {
		for _, l := range labels {
			if r.Verdict == l {
				return true
			}
		}
		return false
	}
}

// biasedTable prints the biased scenario: treatment 20 points more
// accurate (70% → 90%) and no slower, a trial's struggle making it both
// slow and, past its arm's threshold, wrong. Speed over both-correct pairs
// alone then finds treatment slower.
func biasedTable(w io.Writer, runs int) {
	fmt.Fprintln(w, "Biased scenario: 70% → 90% correct, no speed difference, failures are the slow trials;", runs, "runs of 10 intents.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| pairs per intent | intents slower or mixed | verdict slower or mixed | both-correct test alone significantly slower (α, per intent) |")
	fmt.Fprintln(w, "|--:|--:|--:|--:|")
	for _, n := range []int{20, 50, 100} {
		sc := scenario{intents: 10, pairs: n, pc: 0.7, pt: 0.9, speedup: 1, struggle: true}
		intents, verdict, alone := biased(sc, runs)
		fmt.Fprintf(w, "| %d | %.3f | %.3f | %.3f |\n", n, intents, verdict, alone)
	}
}

// biased returns, over runs of sc, the share of intents labelled slower or
// mixed, of runs whose verdict is, and of intents whose speed test over
// both-correct pairs alone found treatment slower at α.
func biased(sc scenario, runs int) (intents, verdict, alone float64) {
	var nIntents, slowIntents, slowRuns, aloneSlow int
	bad := func(l pairbench.Label) bool { return l == pairbench.Slower || l == pairbench.Mixed }
	_ = rate(sc, runs, 4, func(r *report.Report) bool {
		if bad(r.Verdict) {
			slowRuns++
		}
		for _, in := range r.Intents {
			nIntents++
			if bad(in.Label) {
				slowIntents++
			}
			if s := in.Speed; s != nil && s.P <= r.Alpha && s.Speedup.Est < 1 {
				aloneSlow++
			}
		}
		return false
	})
	return float64(slowIntents) / float64(nIntents), float64(slowRuns) / float64(runs), float64(aloneSlow) / float64(nIntents)
}

func joinInts(xs []int, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, sep)
}
