package report

import (
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/stats"
)

// Build computes the verdict on a run from its plan and its rows (every
// attempt, in any order): NewBuilder, Add for each row, Report. It never
// fails: rows that do not validate are skipped and counted, intents with
// rows but no plan entry are reported as unplanned, and planned intents
// without rows are reported with no pairs. The same plan and rows always
// give the same report. Build does not modify rows.
func Build(plan Plan, rows []pairbench.Row) *Report {
	b := NewBuilder(plan)
	for i := range rows {
		b.Add(&rows[i])
	}
	return b.Report()
}

// Report computes the report from the rows added so far. Call it once.
func (b *Builder) Report() *Report {
	plan := b.plan
	alpha := plan.Alpha
	if alpha <= 0 || alpha >= 1 {
		alpha = stats.DefaultAlpha
	}
	rep := &Report{
		V: ReportVersion, RunID: plan.RunID, Model: plan.Model, Source: plan.Source,
		Alpha: alpha, Z: stats.Z(alpha), Seed: plan.Seed, SkippedRows: b.skipped,
		Incomplete: plan.Incomplete, Forced: plan.Forced, Looks: plan.Looks,
	}

	adoption := b.adoption
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
	for _, in := range b.intents {
		if !planned[in.name] {
			extra = append(extra, PlanIntent{ID: in.name, Domain: in.domain})
		}
	}
	slices.SortFunc(extra, func(x, y PlanIntent) int { return strings.Compare(x.ID, y.ID) })
	specs = append(specs, extra...)

	a := analysis{alpha: alpha, z: rep.Z}
	rep.Intents = make([]Intent, len(specs))
	work := make([]intentWork, len(specs))
	parallel(len(specs), func(i int) {
		spec := specs[i]
		in := Intent{
			ID: spec.ID, Domain: spec.Domain, Class: spec.Class, Placebo: spec.Placebo,
			Tools: spec.Tools, Agreement: spec.Agreement, Unplanned: !planned[spec.ID],
		}
		in.Pairs.Planned = spec.Pairs
		var pairs []pairRef
		if ir := b.byName[spec.ID]; ir != nil {
			pairs = ir.pairs(&in.Pairs)
		}
		in.Pairs.Missing = max(0, max(in.Pairs.Planned, in.Pairs.Seen)-in.Pairs.Complete-in.Pairs.LostToAborts-len(in.Pairs.EnvDiffers))
		work[i] = a.intent(&in, pairs)
		in.Score = a.score(spec.Class, spec.Criteria, pairs)
		rep.Intents[i] = in
	})
	placebo := a.placebo(rep.Intents, work)
	head := a.test(rep.Intents, work, placebo)
	a.armsBeforeLabels(plan, rep.Intents)
	a.label(rep.Intents, adoption)
	rep.Verdict = pairbench.Worst(labelsOf(rep.Intents)...)
	if head != nil {
		var pl *Placebo
		if placebo != nil {
			pl = placebo.out
		}
		a.headline(head, rep.Intents, pl)
		rep.Headline, rep.Verdict = head, head.Label
	}
	rep.Tools = toolTable(b.tools)
	a.armsAfterLabels(plan, rep, work, b.tools)
	rep.Run = a.runChecks(rep.Intents, work)
	if placebo != nil {
		rep.Run.Placebo = placebo.out
	}
	rep.Run.Attempts, rep.Run.SpendUSD = b.attempts, b.spend
	rep.Run.Judge = judgeAgreement(rep.Intents)
	if plan.Later != nil {
		reach := laterReach(plan.Later, rep.Intents, work)
		rep.reachable = &reach
	}
	return rep
}

// laterReach reports whether a claim can still be reached at one of the
// later looks, whatever the pairs still to run (stats.ClaimReachable): the
// benched intents' both-correct samples and discordant pairs so far, each
// intent gaining at most its pairs planned by the look less its complete
// pairs (pairs lost to aborts, or not counted, may yet be run again).
func laterReach(later []LaterLook, intents []Intent, work []intentWork) bool {
	for _, l := range later {
		var in []stats.ReachIntent
		for i := range intents {
			if intents[i].Placebo {
				continue
			}
			t := intents[i].Table
			in = append(in, stats.ReachIntent{Speed: work[i].speed, B: t.TreatmentOnly, C: t.ControlOnly,
				More: max(0, l.Pairs[intents[i].ID]-intents[i].Pairs.Complete)})
		}
		if stats.ClaimReachable(in, l.Alpha) {
			return true
		}
	}
	return false
}

// parallel runs fn(0..n-1) on every core.
func parallel(n int, fn func(i int)) {
	var eg errgroup.Group
	eg.SetLimit(runtime.GOMAXPROCS(0))
	for i := range n {
		eg.Go(func() error { fn(i); return nil })
	}
	_ = eg.Wait() // the workers return no errors
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
	alpha float64
	z     float64
}

// intentWork is what the tests of an intent need after its first pass.
type intentWork struct {
	pairs []pairRef
	// speed and adopters are the signed-rank samples behind in.Speed and
	// in.Adopters (nil without them); composite is every complete pair's
	// time to a correct answer (nil without complete pairs).
	speed, adopters, composite *stats.RankSample
	// condP and condMin are the speed test's p and attainable p, compP and
	// compMin the composite test's.
	condP, condMin, compP, compMin float64
}

// intent fills everything about one intent that does not need the other
// intents or the signed-rank null distribution.
func (a *analysis) intent(in *Intent, pairs []pairRef) intentWork {
	in.Table = tableOf(pairs)
	in.Control = a.arm(pairs, false)
	in.Treatment = a.arm(pairs, true)
	in.Accuracy = a.accuracy(in.Table)

	w := intentWork{pairs: pairs, condP: 1, condMin: 1, compP: 1, compMin: 1}
	if len(pairs) > 0 {
		cs := stats.NewRankSample(compositeRatios(pairs))
		w.composite = &cs
	}
	both := bothCorrect(pairs)
	in.Speed, w.speed = speedOf(both, true)
	if adopted := in.Treatment.Adoption; adopted != nil && adopted.X > 0 && adopted.X < adopted.N {
		var sub []pairRef
		for _, p := range both {
			if p.t.is(flagAdopted) {
				sub = append(sub, p)
			}
		}
		in.Adopters, w.adopters = speedOf(sub, false)
	}
	if in.Agreement != nil {
		in.Check = agreementCheck(*in.Agreement, both, in.Speed)
	}
	return w
}

func tableOf(pairs []pairRef) Table {
	var t Table
	for _, p := range pairs {
		switch cc, tc := p.c.correct(), p.t.correct(); {
		case cc && tc:
			t.BothCorrect++
		case tc:
			t.TreatmentOnly++
		case cc:
			t.ControlOnly++
		default:
			t.Neither++
		}
	}
	return t
}

func bothCorrect(pairs []pairRef) []pairRef {
	var out []pairRef
	for _, p := range pairs {
		if p.c.correct() && p.t.correct() {
			out = append(out, p)
		}
	}
	return out
}

// accuracy is the paired accuracy comparison of a table, before the
// family adjustment.
func (a *analysis) accuracy(t Table) Accuracy {
	p, mid := stats.McNemar(t.TreatmentOnly, t.ControlOnly)
	acc := Accuracy{
		Discordant: t.TreatmentOnly + t.ControlOnly,
		Share:      stats.Share(t.TreatmentOnly, t.ControlOnly, a.alpha),
		P:          p, MidP: mid,
		Family: Family{PAdj: 1},
	}
	if n := t.N(); n > 0 {
		acc.Delta = finite(float64(t.TreatmentOnly-t.ControlOnly) / float64(n))
	}
	return acc
}

// speedOf describes the wall times of the given pairs, before the test;
// nil when there are none.
func speedOf(pairs []pairRef, randomized bool) (*Speed, *stats.RankSample) {
	if len(pairs) == 0 {
		return nil, nil
	}
	n := len(pairs)
	tc, tt, d := make([]float64, n), make([]float64, n), make([]float64, n)
	s := &Speed{Pairs: n, Randomized: randomized, Family: Family{PAdj: 1}}
	for i, p := range pairs {
		tc[i], tt[i] = p.c.wall, p.t.wall
		d[i] = stats.LogRatio(tc[i], tt[i])
		switch {
		case d[i] > 0:
			s.Faster++
		case d[i] < 0:
			s.Slower++
		default:
			s.Ties++
		}
	}
	s.MedianControl, s.MedianTreatment = stats.Median(tc), stats.Median(tt)
	s.RatioOfMedians = finite(ratio(s.MedianControl, s.MedianTreatment))
	s.FromFirstRequest = fromFirstRequest(pairs)
	rs := stats.NewRankSample(d)
	s.Speedup.Est = math.Exp(rs.HL) // the test fills in the rest
	return s, &rs
}

// fromFirstRequest describes the pairs' times from each agent's first
// model request; nil unless every trial recorded its start-up.
func fromFirstRequest(pairs []pairRef) *SpeedFromFirstRequest {
	n := len(pairs)
	tc, tt, d := make([]float64, n), make([]float64, n), make([]float64, n)
	for i, p := range pairs {
		if p.c.startup <= 0 || p.t.startup <= 0 {
			return nil
		}
		tc[i], tt[i] = max(p.c.wall-float64(p.c.startup), 0), max(p.t.wall-float64(p.t.startup), 0)
		d[i] = stats.LogRatio(tc[i], tt[i])
	}
	f := &SpeedFromFirstRequest{MedianControl: stats.Median(tc), MedianTreatment: stats.Median(tt)}
	f.RatioOfMedians = finite(ratio(f.MedianControl, f.MedianTreatment))
	rs := stats.NewRankSample(d)
	f.Speedup = math.Exp(rs.HL)
	return f
}

func ratio(c, t float64) float64 {
	if c == t {
		return 1
	}
	return c / t
}

// arm describes one arm over the complete pairs.
func (a *analysis) arm(pairs []pairRef, treatment bool) ArmStats {
	st := ArmStats{N: len(pairs), Outcomes: map[pairbench.Outcome]int{}}
	side := 0 // in pairRef.x
	if treatment {
		side = 1
	}
	pick := func(p pairRef) *record {
		if treatment {
			return p.t
		}
		return p.c
	}
	var wall float64
	adopted := 0
	native := map[string]bool{}
	for _, p := range pairs {
		r := pick(p)
		st.Outcomes[r.outcome()]++
		wall += r.wall
		if r.is(flagAdopted) {
			adopted++
		}
		if r.correct() {
			st.Correct++
			if r.is(flagToolless) {
				st.Toolless++
			}
		}
		if r.is(flagRefused) {
			st.BrowserRefused = append(st.BrowserRefused, int(r.pair))
		}
		st.WebMCP.add(r)
		if tools := p.x[side].native(); len(tools) > 0 {
			st.NativeStarts = append(st.NativeStarts, int(r.pair))
			for _, t := range tools {
				native[t] = true
			}
		}
	}
	st.NativeTools = slices.Sorted(maps.Keys(native))
	st.Rate = stats.Wilson(st.Correct, st.N, a.z)
	if treatment {
		st.Adoption = &Proportion{X: adopted, N: st.N, Interval: stats.Wilson(adopted, st.N, a.z)}
	}
	buf := make([]float64, 0, len(pairs))
	med := func(keep func(*record) bool, val func(*record) float64) *float64 {
		buf = buf[:0]
		for _, p := range pairs {
			if r := pick(p); keep == nil || keep(r) {
				buf = append(buf, val(r))
			}
		}
		return finite(stats.Median(buf))
	}
	st.MedianWallCorrect = med((*record).correct, func(r *record) float64 { return r.wall })
	st.MedianWall = med(nil, func(r *record) float64 { return r.wall })
	st.MedianTurns = med(nil, func(r *record) float64 { return float64(r.turns) })
	st.MedianInputTokens = med(nil, func(r *record) float64 { return float64(r.inputTokens) })
	st.MedianCost = med(nil, func(r *record) float64 { return r.cost })
	if st.Correct > 0 {
		st.MinutesPerCorrect = finite(wall / 60 / float64(st.Correct))
	}
	return st
}

// placeboWork is the pooled placebo check before its tests.
type placeboWork struct {
	out    *Placebo
	sample *stats.RankSample
}

// placebo pools the placebo intents' complete pairs; nil without any.
func (a *analysis) placebo(intents []Intent, work []intentWork) *placeboWork {
	var pl *placeboWork
	var pairs []pairRef
	for i, in := range intents {
		if in.Placebo {
			if pl == nil {
				pl = &placeboWork{out: &Placebo{}}
			}
			pl.out.Intents = append(pl.out.Intents, in.ID)
			pairs = append(pairs, work[i].pairs...)
		}
	}
	if pl != nil {
		pl.out.Table = tableOf(pairs)
		pl.out.Accuracy = a.accuracy(pl.out.Table)
		pl.out.Speed, pl.sample = speedOf(bothCorrect(pairs), true)
	}
	return pl
}

// speedTest is one signed-rank test to run: its sample, where its results
// go, and (once the family is adjusted) its second level.
type speedTest struct {
	sample *stats.RankSample
	out    *Speed
	p      float64
	adj    bool // part of the speed family
}

// test runs the signed-rank tests, the two families' adjustments and the
// adjusted intervals. The null distributions come from two passes over the
// numbers of pairs (the adjusted levels need every intent's raw p), and the
// Walsh-average selections for the intervals run on every core.
func (a *analysis) test(intents []Intent, work []intentWork, pl *placeboWork) *Headline {
	var tests []*speedTest
	for i := range intents {
		if w := work[i]; w.speed != nil {
			tests = append(tests, &speedTest{sample: w.speed, out: intents[i].Speed, adj: true})
		}
		if w := work[i]; w.adopters != nil {
			tests = append(tests, &speedTest{sample: w.adopters, out: intents[i].Adopters})
		}
	}
	if pl != nil && pl.sample != nil {
		tests = append(tests, &speedTest{sample: pl.sample, out: pl.out.Speed})
	}
	byN := map[int][]*speedTest{}
	var ns []int
	for _, t := range tests {
		n := t.sample.N()
		ns = append(ns, n)
		byN[n] = append(byN[n], t)
	}
	composites := map[int][]*intentWork{}
	for i := range work {
		if c := work[i].composite; c != nil {
			ns = append(ns, c.N())
			composites[c.N()] = append(composites[c.N()], &work[i])
		}
	}
	type cut struct {
		c     int
		level float64
	}
	cuts := make(map[*speedTest][2]cut, len(tests))
	pmin := make(map[*speedTest]float64, len(tests))
	noise := map[int]float64{}
	stats.RankNulls(ns, func(null stats.RankNull) {
		c := null.Critical(a.alpha)
		noise[null.N] = stats.RejectRate(null, c)
		for _, t := range byN[null.N] {
			t.p = t.sample.P(null)
			pmin[t] = t.sample.PMin(null)
			cuts[t] = [2]cut{{c, 1 - stats.RejectRate(null, c)}}
		}
		for _, w := range composites[null.N] {
			w.compP, w.compMin = w.composite.P(null), w.composite.PMin(null)
		}
	})

	for i := range intents {
		if work[i].speed != nil {
			t := findTest(tests, intents[i].Speed)
			work[i].condP, work[i].condMin = t.p, pmin[t]
		}
	}
	head := a.families(intents, work)
	for i := range intents {
		in := &intents[i]
		iv := stats.Share(in.Table.TreatmentOnly, in.Table.ControlOnly, in.Accuracy.Threshold)
		if !in.Accuracy.Tested {
			iv = stats.ExactInterval{Est: iv.Est, Lo: 0, Hi: 1, Level: 1, TooFew: true}
		}
		in.Accuracy.ShareAdj = &iv
		nSpeed := 0
		if in.Speed != nil {
			nSpeed = in.Speed.Pairs
		}
		in.NoiseProb = 1 - (1-noise[nSpeed])*(1-stats.RejectProb(in.Accuracy.Discordant, a.alpha))
	}

	// Second pass: the adjusted levels.
	stats.RankNulls(ns, func(null stats.RankNull) {
		for _, t := range byN[null.N] {
			if !t.adj {
				continue
			}
			cs := cuts[t]
			if t.out.Tested {
				c := null.Critical(t.out.Threshold)
				cs[1] = cut{c, 1 - stats.RejectRate(null, c)}
			}
			cuts[t] = cs
		}
	})
	parallel(len(tests), func(i int) {
		t := tests[i]
		cs := cuts[t]
		t.out.P = t.p
		t.out.Speedup = t.sample.SpeedupAt(cs[0].c, cs[0].level, t.p > a.alpha)
		if t.adj {
			iv := stats.ExactInterval{Est: t.out.Speedup.Est, Lo: 0, Hi: math.Inf(1), Level: 1, TooFew: true}
			if t.out.Tested {
				iv = t.sample.SpeedupAt(cs[1].c, cs[1].level, t.out.PAdj > a.alpha)
			}
			t.out.SpeedupAdj = &iv
		}
	})
	return head
}

func findTest(tests []*speedTest, s *Speed) *speedTest {
	for _, t := range tests {
		if t.out == s {
			return t
		}
	}
	return nil
}

// label labels every intent (see docs/statistics.md for the rules and
// their order).
func (a *analysis) label(intents []Intent, adoption map[string]*DomainAdoption) {
	for i := range intents {
		in := &intents[i]
		in.Label, in.Why = decide(in, adoption[in.Domain], a.alpha)
	}
}
