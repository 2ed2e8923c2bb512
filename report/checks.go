package report

import (
	"cmp"
	"math"
	"slices"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/stats"
)

// maxExamples bounds the pairs named by the start-delay check.
const maxExamples = 10

// startDelayLimitMS is how far apart, after page load, the two agents of a
// pair may launch before the pair is named by the start-delay check.
const startDelayLimitMS = 1000

// toolTable turns the per-tool tallies into rows ordered by domain, then
// registered tools first, then tool name, each with its three most common
// errors.
func toolTable(tools map[toolKey]*toolAcc) []ToolFailures {
	out := make([]ToolFailures, 0, len(tools))
	for k, acc := range tools {
		tf := ToolFailures{Domain: k.domain, Tool: k.tool, Registered: k.registered, Calls: acc.calls, Failures: acc.failures,
			NotRegistered: acc.unregistered}
		for msg, n := range acc.errors {
			tf.Errors = append(tf.Errors, ErrorCount{Error: msg, Count: n})
		}
		slices.SortFunc(tf.Errors, func(x, y ErrorCount) int {
			return cmp.Or(cmp.Compare(y.Count, x.Count), cmp.Compare(x.Error, y.Error))
		})
		if len(tf.Errors) > 3 {
			tf.Errors = tf.Errors[:3]
		}
		out = append(out, tf)
	}
	slices.SortFunc(out, func(x, y ToolFailures) int {
		return cmp.Or(cmp.Compare(x.Domain, y.Domain), -compareBool(x.Registered, y.Registered), cmp.Compare(x.Tool, y.Tool))
	})
	return out
}

func compareBool(x, y bool) int {
	switch {
	case x == y:
		return 0
	case x:
		return 1
	}
	return -1
}

// runChecks computes the report's footer, but for the placebo check, from
// the labelled intents and their complete pairs (work[i] belongs to
// intents[i]).
func (a *analysis) runChecks(intents []Intent, work []intentWork) RunChecks {
	var rc RunChecks
	caps := map[pairbench.Cap]*CapCount{}
	var order [2]struct {
		t Table
		d []float64
	}
	for i, in := range intents {
		for _, p := range work[i].pairs {
			for k, r := range []*record{p.c, p.t} {
				tot := &rc.Control
				if k == 1 {
					tot = &rc.Treatment
				}
				tot.AgentMinutes += r.wall / 60
				tot.Turns += int(r.turns)
				tot.SpendUSD += r.cost
				for _, cp := range capsHit(r, p.x[k]) {
					cc := caps[cp]
					if cc == nil {
						cc = &CapCount{Cap: cp}
						caps[cp] = cc
					}
					if k == 0 {
						cc.Control++
					} else {
						cc.Treatment++
					}
				}
			}
			rc.StartDelay.Checked++
			if d := p.c.startDelay - p.t.startDelay; d > startDelayLimitMS || d < -startDelayLimitMS {
				rc.StartDelay.Apart++
				if len(rc.StartDelay.Examples) < maxExamples {
					rc.StartDelay.Examples = append(rc.StartDelay.Examples, PairRef{Intent: in.ID, Pair: int(p.c.pair)})
				}
			}
			o := &order[0]
			if p.c.order() == pairbench.BA {
				o = &order[1]
			}
			switch cc, tc := p.c.correct(), p.t.correct(); {
			case cc && tc:
				o.t.BothCorrect++
				o.d = append(o.d, stats.LogRatio(p.c.wall, p.t.wall))
			case tc:
				o.t.TreatmentOnly++
			case cc:
				o.t.ControlOnly++
			default:
				o.t.Neither++
			}
		}
	}
	known := []pairbench.Cap{pairbench.CapTime, pairbench.CapTurns, pairbench.CapSpend}
	for _, cp := range known {
		if caps[cp] == nil {
			caps[cp] = &CapCount{Cap: cp}
		}
	}
	for _, cc := range caps {
		rc.Caps = append(rc.Caps, *cc)
	}
	slices.SortFunc(rc.Caps, func(x, y CapCount) int {
		ix, iy := slices.Index(known, x.Cap), slices.Index(known, y.Cap)
		if ix < 0 {
			ix = len(known)
		}
		if iy < 0 {
			iy = len(known)
		}
		return cmp.Or(cmp.Compare(ix, iy), cmp.Compare(x.Cap, y.Cap))
	})

	for k, o := range order {
		oe := OrderEffect{Order: pairbench.AB, Pairs: o.t.N(), BothCorrect: len(o.d)}
		if k == 1 {
			oe.Order = pairbench.BA
		}
		if n := o.t.N(); n > 0 {
			oe.Delta = finite(float64(o.t.TreatmentOnly-o.t.ControlOnly) / float64(n))
		}
		if len(o.d) > 0 {
			oe.Speedup = finite(math.Exp(stats.NewRankSample(o.d).HL))
		}
		rc.Order = append(rc.Order, oe)
	}

	hist := map[pairbench.Label]int{}
	var speedups []float64
	for _, in := range intents {
		hist[in.Label]++
		if in.Speed != nil && !math.IsNaN(in.Speed.Speedup.Est) && !math.IsInf(in.Speed.Speedup.Est, 0) {
			speedups = append(speedups, in.Speed.Speedup.Est)
		}
		if in.Label != pairbench.NoAdoption && in.Label != pairbench.Inconclusive {
			rc.Noise.Expected += in.NoiseProb
			if in.Label.Claims() {
				rc.Noise.Observed++
			}
		}
		if in.Class == pairbench.AnswerShapeOnly && in.Label.Claims() {
			rc.ShapeOnly = append(rc.ShapeOnly, in.ID)
		}
		w := in.Control.WebMCP
		w.plus(in.Treatment.WebMCP)
		rc.WebMCP.plus(w)
		if w.Mixed() {
			rc.MixedIntents = append(rc.MixedIntents, in.ID)
		}
	}
	for _, l := range pairbench.Labels {
		if hist[l] > 0 {
			rc.Labels = append(rc.Labels, LabelCount{Label: l, Count: hist[l]})
		}
	}
	rc.MedianSpeedup = finite(stats.Median(speedups))
	return rc
}
