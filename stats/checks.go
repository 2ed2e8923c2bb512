package stats

import (
	"cmp"
	"math"
	"slices"

	"github.com/pairbench/pairbench"
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
		tf := ToolFailures{Domain: k.domain, Tool: k.tool, Registered: k.registered, Calls: acc.calls, Failures: acc.failures}
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

// runChecks computes the report's footer from the labelled intents and
// their complete pairs (refs[i] belongs to intents[i]).
func (a *analysis) runChecks(intents []Intent, refs [][]pairRef) RunChecks {
	rows := a.rows
	var rc RunChecks
	caps := map[pairbench.Cap]*CapCount{}
	var order [2]struct {
		t      Table
		ratios []float64
	}
	var placebo []pairRef
	for i, in := range intents {
		if in.Placebo {
			placebo = append(placebo, refs[i]...)
			rc.placeboNames(in.ID)
		}
		for _, p := range refs[i] {
			c, t := &rows[p.c], &rows[p.t]
			for k, r := range []*pairbench.Row{c, t} {
				tot := &rc.Control
				if k == 1 {
					tot = &rc.Treatment
				}
				tot.AgentMinutes += r.WallSeconds / 60
				tot.Turns += r.Turns
				tot.SpendUSD += r.CostUSD
				for _, cp := range r.CapsHit {
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
			if d := c.StartDelayMS - t.StartDelayMS; d > startDelayLimitMS || d < -startDelayLimitMS {
				rc.StartDelay.Apart++
				if len(rc.StartDelay.Examples) < maxExamples {
					rc.StartDelay.Examples = append(rc.StartDelay.Examples, PairRef{Intent: in.ID, Pair: c.Pair})
				}
			}
			o := &order[0]
			if c.Order == pairbench.BA {
				o = &order[1]
			}
			cc, tc := c.Outcome == pairbench.Correct, t.Outcome == pairbench.Correct
			switch {
			case cc && tc:
				o.t.BothCorrect++
				o.ratios = append(o.ratios, pairRatio(c.WallSeconds, t.WallSeconds))
			case tc:
				o.t.TreatmentOnly++
			case cc:
				o.t.ControlOnly++
			default:
				o.t.Neither++
			}
		}
	}
	for _, cp := range []pairbench.Cap{pairbench.CapTime, pairbench.CapTurns, pairbench.CapSpend} {
		if caps[cp] == nil {
			caps[cp] = &CapCount{Cap: cp}
		}
	}
	for _, cc := range caps {
		rc.Caps = append(rc.Caps, *cc)
	}
	known := []pairbench.Cap{pairbench.CapTime, pairbench.CapTurns, pairbench.CapSpend}
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
		oe := OrderEffect{Order: pairbench.AB, Pairs: o.t.N(), BothCorrect: len(o.ratios)}
		if k == 1 {
			oe.Order = pairbench.BA
		}
		if n := o.t.N(); n > 0 {
			oe.Delta = finite(float64(o.t.TreatmentOnly-o.t.ControlOnly) / float64(n))
		}
		if len(o.ratios) > 0 {
			iv, _ := typicalRatios(o.ratios, a.alpha)
			oe.Speedup = finite(iv.Est)
		}
		rc.Order = append(rc.Order, oe)
	}

	hist := map[pairbench.Label]int{}
	var speedups []float64
	for _, in := range intents {
		hist[in.Label]++
		if in.Speed != nil && !math.IsNaN(in.Speed.Ratio.Est) && !math.IsInf(in.Speed.Ratio.Est, 0) {
			speedups = append(speedups, in.Speed.Ratio.Est)
		}
		if in.Label != pairbench.NoAdoption && in.Label != pairbench.Inconclusive {
			rc.Noise.Expected += in.NoiseProb
			if isSignal(in.Label) {
				rc.Noise.Observed++
			}
		}
		if in.Class == pairbench.AnswerShapeOnly && isSignal(in.Label) {
			rc.ShapeOnly = append(rc.ShapeOnly, in.ID)
		}
	}
	for _, l := range pairbench.Labels {
		if hist[l] > 0 {
			rc.Labels = append(rc.Labels, LabelCount{Label: l, Count: hist[l]})
		}
	}
	rc.MedianSpeedup = finite(median(speedups))

	if rc.Placebo != nil {
		for _, p := range placebo {
			cc, tc := rows[p.c].Outcome == pairbench.Correct, rows[p.t].Outcome == pairbench.Correct
			switch {
			case cc && tc:
				rc.Placebo.Table.BothCorrect++
			case tc:
				rc.Placebo.Table.TreatmentOnly++
			case cc:
				rc.Placebo.Table.ControlOnly++
			default:
				rc.Placebo.Table.Neither++
			}
		}
		rc.Placebo.Accuracy = a.accuracy(rc.Placebo.Table)
		rc.Placebo.Speed = a.speed(bothCorrect(rows, placebo), "run/placebo", true)
	}
	return rc
}

// placeboNames records a placebo intent by name.
func (rc *RunChecks) placeboNames(id string) {
	if rc.Placebo == nil {
		rc.Placebo = &Placebo{}
	}
	rc.Placebo.Intents = append(rc.Placebo.Intents, id)
}
