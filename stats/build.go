package stats

import (
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/pairbench/pairbench"
)

// Build computes the verdict on a run from its plan and its rows (every
// attempt, in any order). It never fails: rows that do not validate are
// skipped and counted, intents with rows but no plan entry are reported as
// unplanned, and planned intents without rows are reported with no pairs.
// The same plan and rows always give the same report.
func Build(plan Plan, rows []pairbench.Row) *Report {
	return build(plan, rows, max(plan.Resamples, MinResamples))
}

// build is Build with b bootstrap resamples, so that simulations, whose
// labels do not depend on the bootstrap, can run many reports quickly.
func build(plan Plan, rows []pairbench.Row, b int) *Report {
	alpha := plan.Alpha
	if alpha <= 0 || alpha >= 1 {
		alpha = DefaultAlpha
	}
	rep := &Report{
		V: ReportVersion, RunID: plan.RunID, Model: plan.Model, Source: plan.Source,
		Alpha: alpha, Z: Z(alpha), Seed: plan.Seed, Resamples: b,
	}
	g := group(rows)
	rep.SkippedRows = g.skipped

	adoption := g.adoption
	for _, d := range plan.Adoption {
		adoption[d.Domain] = &d
	}
	for _, d := range adoption {
		rep.Adoption = append(rep.Adoption, *d)
	}
	slices.SortFunc(rep.Adoption, func(x, y DomainAdoption) int { return strings.Compare(x.Domain, y.Domain) })

	// The intents: planned ones in plan order (the first entry of a
	// repeated id), then unplanned ones by name.
	planned := map[string]bool{}
	var specs []PlanIntent
	for _, p := range plan.Intents {
		if !planned[p.ID] {
			planned[p.ID] = true
			specs = append(specs, p)
		}
	}
	var extra []PlanIntent
	for _, in := range g.intents {
		if !planned[in.name] {
			extra = append(extra, PlanIntent{ID: in.name, Domain: in.domain})
		}
	}
	slices.SortFunc(extra, func(x, y PlanIntent) int { return strings.Compare(x.ID, y.ID) })
	specs = append(specs, extra...)

	a := analysis{rows: rows, alpha: alpha, z: rep.Z, seed: plan.Seed, b: b}
	rep.Intents = make([]Intent, len(specs))
	refs := make([][]pairRef, len(specs))
	var eg errgroup.Group
	eg.SetLimit(runtime.GOMAXPROCS(0))
	for i, spec := range specs {
		eg.Go(func() error {
			var pairs []pairRef
			in := Intent{
				ID: spec.ID, Domain: spec.Domain, Class: spec.Class, Placebo: spec.Placebo,
				Tools: spec.Tools, Agreement: spec.Agreement, Unplanned: !planned[spec.ID],
			}
			in.Pairs.Planned = spec.Pairs
			if ir := g.byName[spec.ID]; ir != nil {
				pairs = ir.pairs(rows, &in.Pairs)
			}
			in.Pairs.Missing = max(0, max(in.Pairs.Planned, in.Pairs.Seen)-in.Pairs.Complete-in.Pairs.LostToAborts)
			a.intent(&in, pairs)
			rep.Intents[i], refs[i] = in, pairs
			return nil
		})
	}
	_ = eg.Wait() // the workers return no errors

	a.label(rep.Intents, adoption)
	rep.Verdict = pairbench.Worst(labelsOf(rep.Intents)...)
	rep.Tools = toolTable(g.tools)
	rep.Run = a.runChecks(rep.Intents, refs)
	rep.Run.Attempts, rep.Run.SpendUSD = g.attempts, g.spend
	return rep
}

func labelsOf(intents []Intent) []pairbench.Label {
	out := make([]pairbench.Label, len(intents))
	for i, in := range intents {
		out[i] = in.Label
	}
	return out
}

// analysis holds what every per-intent computation shares.
type analysis struct {
	rows  []pairbench.Row
	alpha float64
	z     float64
	seed  uint64
	b     int
}

// rng returns the bootstrap stream for one named analysis, so each result
// depends on the seed and its own name only, not on the order of work.
func (a *analysis) rng(name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(a.seed, h.Sum64()))
}

// intent fills everything about one intent except its label and adjusted
// p values.
func (a *analysis) intent(in *Intent, pairs []pairRef) {
	rows := a.rows
	for _, p := range pairs {
		cc, tc := rows[p.c].Outcome == pairbench.Correct, rows[p.t].Outcome == pairbench.Correct
		switch {
		case cc && tc:
			in.Table.BothCorrect++
		case tc:
			in.Table.TreatmentOnly++
		case cc:
			in.Table.ControlOnly++
		default:
			in.Table.Neither++
		}
	}
	var buf []float64
	in.Control, buf = a.arm(pairs, false, buf)
	in.Treatment, _ = a.arm(pairs, true, buf)
	in.Accuracy = a.accuracy(in.Table)

	both := bothCorrect(rows, pairs)
	in.Speed = a.speed(both, in.ID+"/speed", true)
	if adopted := in.Treatment.Adoption; adopted != nil && adopted.X > 0 && adopted.X < adopted.N {
		var sub []pairRef
		for _, p := range both {
			if rows[p.t].Adopted {
				sub = append(sub, p)
			}
		}
		in.Adopters = a.speed(sub, in.ID+"/adopters", false)
	}
	if in.Agreement != nil {
		in.Check = agreementCheck(*in.Agreement, rows, both, in.Speed)
	}
	nSpeed := 0
	if in.Speed != nil {
		nSpeed = in.Speed.Faster + in.Speed.Slower
	}
	in.NoiseProb = 1 - (1-RejectProb(nSpeed, a.alpha))*(1-RejectProb(in.Accuracy.Discordant, a.alpha))
}

func bothCorrect(rows []pairbench.Row, pairs []pairRef) []pairRef {
	var out []pairRef
	for _, p := range pairs {
		if rows[p.c].Outcome == pairbench.Correct && rows[p.t].Outcome == pairbench.Correct {
			out = append(out, p)
		}
	}
	return out
}

// accuracy is the paired accuracy comparison of a table.
func (a *analysis) accuracy(t Table) Accuracy {
	p, mid := McNemar(t.TreatmentOnly, t.ControlOnly)
	return Accuracy{
		Delta: Newcombe(t, a.z), P: p, MidP: mid, PAdj: p,
		Discordant: t.TreatmentOnly + t.ControlOnly,
	}
}

// speed compares wall times over the given pairs; nil when there are none.
func (a *analysis) speed(pairs []pairRef, stream string, randomized bool) *Speed {
	if len(pairs) == 0 {
		return nil
	}
	n := len(pairs)
	tc, tt, r := make([]float64, n), make([]float64, n), make([]float64, n)
	s := &Speed{Pairs: n, Randomized: randomized}
	for i, p := range pairs {
		tc[i], tt[i] = a.rows[p.c].WallSeconds, a.rows[p.t].WallSeconds
		r[i] = pairRatio(tc[i], tt[i])
		switch {
		case r[i] > 1:
			s.Faster++
		case r[i] < 1:
			s.Slower++
		default:
			s.Ties++
		}
	}
	// median reorders its argument, and the bootstrap below must resample
	// tc[i] and tt[i] together, so the medians are taken of copies.
	s.MedianControl, s.MedianTreatment = median(slices.Clone(tc)), median(slices.Clone(tt))
	if randomized {
		s.Ratio = RatioOfMedians(tc, tt, a.alpha, a.b, a.rng(stream))
	} else {
		// A subset the agent chose gets no bootstrap interval: resampling
		// it would lend a non-randomized comparison a precision it does
		// not have (and cost as much again as the randomized one).
		s.Ratio = Interval{Est: s.MedianControl / s.MedianTreatment, Lo: math.NaN(), Hi: math.NaN()}
	}
	s.Typical, s.P = typicalRatios(r, a.alpha)
	s.PAdj = s.P
	return s
}

// arm describes one arm over the complete pairs; buf is scratch space,
// returned for reuse.
func (a *analysis) arm(pairs []pairRef, treatment bool, buf []float64) (ArmStats, []float64) {
	st := ArmStats{N: len(pairs), Outcomes: map[pairbench.Outcome]int{}}
	pick := func(p pairRef) *pairbench.Row {
		if treatment {
			return &a.rows[p.t]
		}
		return &a.rows[p.c]
	}
	var wall float64
	adopted := 0
	native := map[string]bool{}
	for _, p := range pairs {
		r := pick(p)
		st.Outcomes[r.Outcome]++
		wall += r.WallSeconds
		if r.Adopted {
			adopted++
		}
		if r.Outcome == pairbench.Correct {
			st.Correct++
			if r.Turns <= 1 && len(r.WebMCP) == 0 {
				st.Toolless++
			}
		}
		if len(r.NativeTools) > 0 {
			st.NativeStarts = append(st.NativeStarts, r.Pair)
			for _, t := range r.NativeTools {
				native[t] = true
			}
		}
	}
	st.NativeTools = slices.Sorted(maps.Keys(native))
	st.Rate = Wilson(st.Correct, st.N, a.z)
	if treatment {
		st.Adoption = &Proportion{X: adopted, N: st.N, Interval: Wilson(adopted, st.N, a.z)}
	}
	med := func(keep func(*pairbench.Row) bool, val func(*pairbench.Row) float64) *float64 {
		buf = buf[:0]
		for _, p := range pairs {
			if r := pick(p); keep == nil || keep(r) {
				buf = append(buf, val(r))
			}
		}
		return finite(median(buf))
	}
	isCorrect := func(r *pairbench.Row) bool { return r.Outcome == pairbench.Correct }
	st.MedianWallCorrect = med(isCorrect, func(r *pairbench.Row) float64 { return r.WallSeconds })
	st.MedianWall = med(nil, func(r *pairbench.Row) float64 { return r.WallSeconds })
	st.MedianTurns = med(nil, func(r *pairbench.Row) float64 { return float64(r.Turns) })
	st.MedianInputTokens = med(nil, func(r *pairbench.Row) float64 { return float64(r.InputTokens) })
	st.MedianCost = med(nil, func(r *pairbench.Row) float64 { return r.CostUSD })
	if st.Correct > 0 {
		st.MinutesPerCorrect = finite(wall / 60 / float64(st.Correct))
	}
	return st, buf
}

// label applies Holm across intents in each family, then labels every
// intent (see docs/statistics.md for the rules and their order).
func (a *analysis) label(intents []Intent, adoption map[string]*DomainAdoption) {
	var speedIdx, accIdx []int
	var speedP, accP []float64
	for i := range intents {
		if s := intents[i].Speed; s != nil && s.Faster+s.Slower > 0 {
			speedIdx, speedP = append(speedIdx, i), append(speedP, s.P)
		}
		if intents[i].Accuracy.Discordant > 0 {
			accIdx, accP = append(accIdx, i), append(accP, intents[i].Accuracy.P)
		}
	}
	for k, adj := range Holm(speedP) {
		intents[speedIdx[k]].Speed.PAdj = adj
	}
	for k, adj := range Holm(accP) {
		intents[accIdx[k]].Accuracy.PAdj = adj
	}
	for i := range intents {
		in := &intents[i]
		in.MinP = MinP{Speed: 1, Accuracy: 1}
		if k := slices.Index(speedIdx, i); k >= 0 {
			s := in.Speed
			in.MinP.Speed = minAdjusted(speedP, k, MinSignP(s.Faster+s.Slower))
		}
		if k := slices.Index(accIdx, i); k >= 0 {
			in.MinP.Accuracy = minAdjusted(accP, k, MinSignP(in.Accuracy.Discordant))
		}
		in.Label, in.Why = decide(in, adoption[in.Domain], a.alpha)
	}
}

// minAdjusted is the Holm-adjusted p of member k had its raw p been best,
// the others' p values held fixed.
func minAdjusted(ps []float64, k int, best float64) float64 {
	alt := slices.Clone(ps)
	alt[k] = best
	return Holm(alt)[k]
}
