package report

import (
	"fmt"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/stats"
)

// A run makes many claims: the run-level verdict on speed and on accuracy
// (pooled over the benched intents), and every intent's speed and accuracy.
// One multiple-testing procedure covers them all, so the chance of any false
// claim in a run is at most α (docs/statistics.md, The run's verdict):
//
//   - the pooled speed test, the pooled accuracy test and the intents'
//     family each start at α/3;
//   - a pooled test that rejects passes its level on, half to the other
//     pooled test (all of it to the intents' family once both have
//     rejected) and half to the intents' family;
//   - the intents' family is every benched intent's speed and accuracy
//     tests together, Tarone's selection and Holm's procedure at the level
//     it ends with (α/3, α/2 or α).
//
// This is a graphical multiple-testing procedure (Bretz et al. 2009), a
// shortcut of a closed test of weighted Bonferroni tests, so it controls the
// family-wise error rate at α whatever the dependence between the tests.
// Placebo intents are in none of it: they test the harness.

// Headline is the run's verdict from the pooled tests.
type Headline struct {
	// Label is the run-level label, by the same rules as an intent's (docs/
	// statistics.md) applied to the pooled tests; Why says which rule.
	Label pairbench.Label `json:"label"`
	Why   string          `json:"why"`
	// Intents counts the benched intents pooled (placebo intents are not).
	Intents  int            `json:"intents"`
	Speed    PooledSpeed    `json:"speed"`
	Accuracy PooledAccuracy `json:"accuracy"`
	// IntentsLevel is the level the intents' family was tested at: α/3,
	// raised by the pooled tests that rejected.
	IntentsLevel float64 `json:"intents_level"`
	// Suspect, when set, says why the harness is suspect: the placebo
	// intents, which the registered tools cannot answer, showed a
	// difference.
	Suspect string `json:"suspect,omitempty"`
	// Claims lists the intents whose labels claim a difference although the
	// pooled tests do not, worst first ("books-less: less accurate").
	Claims []string `json:"claims,omitempty"`
}

// PooledSpeed is the run-level speed test: the van Elteren test on the
// both-correct pairs (conditional on both arms succeeding) and on every
// complete pair's time to a correct answer (a failure slower than any
// correct answer). A speed claim that leans against the pooled accuracy
// difference needs both, in the same direction (SpeedClaimP).
type PooledSpeed struct {
	// Pairs counts both-correct pairs, Complete the complete pairs.
	Pairs    int `json:"pairs"`
	Complete int `json:"complete"`
	// P is the claim's p (SpeedClaimP). PConditional and PComposite are the
	// two tests'.
	P            float64 `json:"p"`
	PConditional float64 `json:"p_conditional"`
	PComposite   float64 `json:"p_composite"`
	// MinP is the smallest P these pairs could give.
	MinP float64 `json:"min_p"`
	// Faster says the tests lean towards treatment being faster.
	Faster bool `json:"faster"`
	// Level is the level the test was decided at; Significant is P ≤ Level.
	Level       float64 `json:"level"`
	Significant bool    `json:"significant"`
}

// PooledAccuracy is the run-level accuracy test: exact McNemar on the
// discordant pairs of every benched intent.
type PooledAccuracy struct {
	TreatmentOnly int `json:"b"`
	ControlOnly   int `json:"c"`
	// Share is treatment's share of the discordant pairs with the
	// Clopper–Pearson interval at 1 − Level: it holds ½ exactly when the
	// test is not significant.
	Share       stats.ExactInterval `json:"share"`
	P           float64             `json:"p"`
	Level       float64             `json:"level"`
	Significant bool                `json:"significant"`
}

// Composite is an intent's speed test on time to a correct answer, which
// a speed claim leaning against the accuracy difference needs besides the
// test over both-correct pairs (SpeedClaimP).
type Composite struct {
	// Pairs counts the complete pairs; P is the signed-rank p over them;
	// Faster says it leans towards treatment.
	Pairs  int     `json:"pairs"`
	P      float64 `json:"p"`
	Faster bool    `json:"faster"`
	// Blocked is set when the test over both-correct pairs alone would have
	// been significant but this one disagreed: the speed over both-correct
	// pairs may be an artefact of which trials failed.
	Blocked bool `json:"blocked,omitempty"`
}

// member is one test in the intents' family.
type member struct {
	intent  int
	speed   bool
	p, pMin float64
}

// families runs the pooled tests and the intents' family, filling every
// intent's Family and MinP, and returns the headline without its label.
func (a *analysis) families(intents []Intent, work []intentWork) *Headline {
	h := &Headline{}
	var cond, comp [][]float64
	var members []member
	for i := range intents {
		in, w := &intents[i], &work[i]
		in.MinP = MinP{Speed: 1, Accuracy: 1}
		if in.Placebo {
			a.alone(in, w)
			continue
		}
		h.Intents++
		h.Accuracy.TreatmentOnly += in.Table.TreatmentOnly
		h.Accuracy.ControlOnly += in.Table.ControlOnly
		if w.composite != nil {
			comp = append(comp, w.composite.Sorted())
			h.Speed.Complete += w.composite.N()
		}
		if w.speed != nil {
			cond = append(cond, w.speed.Sorted())
			h.Speed.Pairs += w.speed.N()
			p := stats.SpeedClaimP(w.condP, in.Speed.Speedup.Est > 1, w.compP, w.composite.HL > 0, in.Table.TreatmentOnly, in.Table.ControlOnly)
			members = append(members, member{i, true, p, w.condMin})
		}
		if d := in.Accuracy.Discordant; d > 0 {
			members = append(members, member{i, false, in.Accuracy.P, stats.MinSignP(d)})
		}
	}
	if h.Intents == 0 {
		return nil
	}
	c, k := stats.VanElteren(cond), stats.VanElteren(comp)
	s := &h.Speed
	s.PConditional, s.PComposite, s.Faster = c.P, k.P, c.Faster
	acc := &h.Accuracy
	s.P = stats.SpeedClaimP(c.P, c.Faster, k.P, k.Faster, acc.TreatmentOnly, acc.ControlOnly)
	s.MinP = c.PMin
	acc.P, _ = stats.McNemar(acc.TreatmentOnly, acc.ControlOnly)
	if h.Intents == 1 {
		// One benched intent: the pooled tests are its own tests, so the
		// whole α goes to them once, through the intents' family.
		s.Level, acc.Level, h.IntentsLevel = a.alpha, a.alpha, a.alpha
	} else {
		s.Level, acc.Level, h.IntentsLevel, s.Significant, acc.Significant = stats.GraphLevels(s.P, acc.P, a.alpha)
	}
	acc.Share = stats.Share(acc.TreatmentOnly, acc.ControlOnly, acc.Level)

	ps, pmin := make([]float64, len(members)), make([]float64, len(members))
	for j, m := range members {
		ps[j], pmin[j] = m.p, m.pMin
	}
	// The family is decided at h.IntentsLevel; its adjusted p values are
	// reported on the scale of α, so that adjusted p ≤ α is still the rule.
	scale := a.alpha / h.IntentsLevel
	for j, f := range stats.AdjustFamily(ps, pmin, h.IntentsLevel) {
		m := members[j]
		in := &intents[m.intent]
		fam := Family{Tested: f.Tested, PAdj: min(1, f.Adj*scale), Threshold: f.Threshold}
		best := min(1, f.Best*scale)
		if m.speed {
			in.Speed.Family, in.MinP.Speed = fam, best
		} else {
			in.Accuracy.Family, in.MinP.Accuracy = fam, best
		}
	}
	for i := range intents {
		in, w := &intents[i], &work[i]
		if in.Speed == nil || w.composite == nil {
			continue
		}
		in.Speed.Composite = &Composite{Pairs: w.composite.N(), P: w.compP, Faster: w.composite.HL > 0}
		if in.Speed.Tested {
			in.Speed.Composite.Blocked = w.condP <= in.Speed.Threshold && in.Speed.PAdj > a.alpha
		}
	}
	return h
}

// alone tests a placebo intent by itself at α, outside every family: its
// labels speak of the harness, not the tools.
func (a *analysis) alone(in *Intent, w *intentWork) {
	if w.speed != nil {
		tested := w.condMin <= a.alpha
		in.Speed.Family = Family{Tested: tested, PAdj: 1}
		if tested {
			in.Speed.PAdj, in.Speed.Threshold, in.MinP.Speed = w.condP, a.alpha, w.condMin
		}
	}
	if d := in.Accuracy.Discordant; d > 0 && stats.MinSignP(d) <= a.alpha {
		in.Accuracy.Family = Family{Tested: true, PAdj: in.Accuracy.P, Threshold: a.alpha}
		in.MinP.Accuracy = stats.MinSignP(d)
	}
}

// headline labels the run from its pooled tests, once the intents are
// labelled: the rules of an intent's label (decide) applied to the run.
func (a *analysis) headline(h *Headline, intents []Intent, placebo *Placebo) {
	if h == nil {
		return
	}
	var lost, total, adopted, benched int
	for _, in := range intents {
		if in.Placebo {
			continue
		}
		benched++
		lost += in.Pairs.LostToAborts
		total += max(in.Pairs.Planned, in.Pairs.Seen)
		if in.Label != pairbench.NoAdoption {
			adopted++
		}
	}
	s, acc := h.Speed, h.Accuracy
	better := acc.TreatmentOnly > acc.ControlOnly
	switch {
	case h.Intents == 1:
		for _, in := range intents {
			if !in.Placebo {
				h.Label, h.Why = in.Label, "One intent was benched, so the run's verdict is its label: "+in.Why
				h.Speed.Significant = in.Speed != nil && in.Speed.Tested && in.Speed.PAdj <= a.alpha
				h.Accuracy.Significant = in.Accuracy.Tested && in.Accuracy.PAdj <= a.alpha
			}
		}
	case adopted == 0:
		h.Label, h.Why = pairbench.NoAdoption, "No benched intent's treatment invoked a registered tool"
	case lost > 0 && 5*lost > total:
		h.Label, h.Why = pairbench.Inconclusive, fmt.Sprintf("%d of %d pairs were lost to aborts (more than a fifth)", lost, total)
	case s.Significant && acc.Significant && s.Faster && better:
		h.Label, h.Why = pairbench.Better, "Across the intents treatment was significantly faster and more accurate"
	case s.Significant && acc.Significant && s.Faster != better:
		h.Label, h.Why = pairbench.Mixed, "Across the intents speed and accuracy were significant in opposite directions"
	case s.Significant && acc.Significant:
		h.Label, h.Why = pairbench.LessAccurate, "Across the intents treatment was significantly less accurate (and slower)"
	case s.Significant && s.Faster:
		h.Label, h.Why = pairbench.Faster, "Across the intents treatment was significantly faster; accuracy showed no significant difference"
	case s.Significant:
		h.Label, h.Why = pairbench.Slower, "Across the intents treatment was significantly slower; accuracy showed no significant difference"
	case acc.Significant && better:
		h.Label, h.Why = pairbench.MoreAccurate, "Across the intents treatment was significantly more accurate; speed showed no significant difference"
	case acc.Significant:
		h.Label, h.Why = pairbench.LessAccurate, "Across the intents treatment was significantly less accurate; speed showed no significant difference"
	case s.MinP > a.alpha/2 && stats.MinSignP(acc.TreatmentOnly+acc.ControlOnly) > a.alpha/2:
		h.Label, h.Why = pairbench.Inconclusive, fmt.Sprintf(
			"Significance was out of reach across the intents: with %d both-correct and %d discordant pairs the smallest attainable p values are %.3g (speed) and %.3g (accuracy), above the α/2 either test can reach",
			s.Pairs, acc.TreatmentOnly+acc.ControlOnly, s.MinP, stats.MinSignP(acc.TreatmentOnly+acc.ControlOnly))
	default:
		h.Label, h.Why = pairbench.NoSignal, "Across the intents neither speed nor accuracy differed significantly"
	}
	for _, in := range worstIntents(intents) {
		if !in.Placebo && in.Label.Claims() && in.Label != h.Label {
			h.Claims = append(h.Claims, fmt.Sprintf("%s: %s", in.ID, in.Label))
		}
	}
	if placebo != nil {
		var what []string
		if placebo.Accuracy.P <= a.alpha {
			what = append(what, fmt.Sprintf("accuracy (McNemar p %.2g)", placebo.Accuracy.P))
		}
		if placebo.Speed != nil && placebo.Speed.P <= a.alpha {
			what = append(what, fmt.Sprintf("speed (signed-rank p %.2g)", placebo.Speed.P))
		}
		if len(what) > 0 {
			h.Suspect = fmt.Sprintf("the placebo %s, which the registered tools cannot answer, differed in %s: the harness, not the tools, may be making the difference",
				pluralize(len(placebo.Intents), "intent"), joinAnd(what))
		}
	}
}

// worstIntents returns the intents ordered by label, worst first, each
// label's in report order.
func worstIntents(intents []Intent) []*Intent {
	var out []*Intent
	for _, l := range pairbench.Labels {
		for i := range intents {
			if intents[i].Label == l {
				out = append(out, &intents[i])
			}
		}
	}
	return out
}

func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	out := items[0]
	for _, s := range items[1 : len(items)-1] {
		out += ", " + s
	}
	return out + " and " + items[len(items)-1]
}
