package report

import (
	"fmt"
	"math"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/stats"
)

// The renderings are tested on a fixed, hand-made Report rather than on
// Build's output, so that a change in how Build labels or summarizes rows
// does not show up as a rendering change (and the other way round). Its
// intervals and p values come from the package's exact functions, so the
// numbers agree with each other as a real report's do. fixtureReport
// covers every label, undefined numbers, a missing speed, an adopters
// subset, both agreement checks, native tools, an unplanned intent, and
// strings that try to inject Markdown and HTML.

const fixtureZ = 1.959964

func fixturePtr(x float64) *float64 { return &x }

// fixtureArm describes an arm with correct of n correct; adopted < 0 means
// control (no adoption).
func fixtureArm(n, correct, adopted int, wall float64) ArmStats {
	a := ArmStats{
		N: n, Correct: correct,
		Outcomes: map[pairbench.Outcome]int{
			pairbench.Correct: correct, pairbench.Wrong: (n - correct + 1) / 2, pairbench.Timeout: (n - correct) / 2,
		},
		Rate:              stats.Wilson(correct, n, fixtureZ),
		MedianWallCorrect: fixturePtr(wall), MedianWall: fixturePtr(wall * 1.1),
		MinutesPerCorrect: fixturePtr(wall * 1.1 * float64(n) / 60 / float64(max(correct, 1))),
		MedianTurns:       fixturePtr(wall / 5), MedianInputTokens: fixturePtr(wall * 400), MedianCost: fixturePtr(wall / 5000),
	}
	if adopted >= 0 {
		a.Adoption = &Proportion{X: adopted, N: n, Interval: stats.Wilson(adopted, n, fixtureZ)}
	}
	return a
}

// fixtureIntent builds an intent from its paired table, the number of
// both-correct pairs where treatment was faster, its typical speedup
// interval, and the Holm factors of its two p values (the Holm level is
// α/factor).
func fixtureIntent(id string, label pairbench.Label, t Table, faster int, speedup stats.Interval, holmAcc, holmSpeed float64) Intent {
	n := t.N()
	ctl, trt := t.BothCorrect+t.ControlOnly, t.BothCorrect+t.TreatmentOnly
	p, mid := stats.McNemar(t.TreatmentOnly, t.ControlOnly)
	d := t.TreatmentOnly + t.ControlOnly
	family := func(p, factor float64, n int) Family {
		return Family{Tested: stats.MinSignP(n)*factor <= 0.05, PAdj: math.Min(1, p*factor), Threshold: 0.05 / factor}
	}
	accFam := family(p, holmAcc, d)
	shareAdj := stats.Share(t.TreatmentOnly, t.ControlOnly, accFam.Threshold)
	in := Intent{
		ID: id, Domain: "books.example", Class: pairbench.AnswerPinned, Tools: []string{"find_books", "book_details"},
		Label: label, Why: fmt.Sprintf("the rule for %s applied", label),
		Pairs:     PairCounts{Planned: n, Seen: n, Complete: n},
		Table:     t,
		Control:   fixtureArm(n, ctl, -1, 60),
		Treatment: fixtureArm(n, trt, trt, 60/speedup.Est),
		Accuracy: Accuracy{
			Delta: fixturePtr(float64(t.TreatmentOnly-t.ControlOnly) / float64(n)), Discordant: d,
			Share: stats.Share(t.TreatmentOnly, t.ControlOnly, 0.05), P: p, MidP: mid, Family: accFam, ShareAdj: &shareAdj,
		},
		MinP:      MinP{Speed: math.Min(1, stats.MinSignP(t.BothCorrect)*holmSpeed), Accuracy: math.Min(1, stats.MinSignP(d)*holmAcc)},
		NoiseProb: stats.RejectProb(t.BothCorrect, 0.05),
	}
	if t.BothCorrect > 0 {
		sp := stats.SignTest(faster, t.BothCorrect-faster)
		fam := family(sp, holmSpeed, t.BothCorrect)
		exact := func(level float64) stats.ExactInterval {
			return stats.ExactInterval{Est: speedup.Est, Lo: speedup.Lo, Hi: speedup.Hi, Level: level, TooFew: stats.MinSignP(t.BothCorrect) > 1-level}
		}
		adj := exact(1 - fam.Threshold)
		adj.Lo, adj.Hi = adj.Lo*0.9, adj.Hi*1.1
		in.Speed = &Speed{
			Pairs: t.BothCorrect, Faster: faster, Slower: t.BothCorrect - faster,
			MedianControl: 60, MedianTreatment: 60 / speedup.Est, RatioOfMedians: fixturePtr(speedup.Est * 0.98),
			Speedup: exact(0.9586), P: sp, Family: fam, SpeedupAdj: &adj, Randomized: true,
		}
	}
	return in
}

func fixtureReport() *Report {
	iv := func(est, lo, hi float64) stats.Interval { return stats.Interval{Est: est, Lo: lo, Hi: hi} }
	intents := []Intent{
		fixtureIntent("books-less", pairbench.LessAccurate, Table{8, 0, 14, 2}, 5, iv(1.05, 0.8, 1.4), 3, 9),
		fixtureIntent("books-slower", pairbench.Slower, Table{23, 0, 0, 1}, 1, iv(0.45, 0.38, 0.55), 9, 4),
		fixtureIntent("books-same", pairbench.Mixed, Table{22, 0, 0, 2}, 21, iv(2.4, 2, 2.9), 9, 5),
		fixtureIntent("weather-unused", pairbench.NoAdoption, Table{9, 0, 0, 1}, 5, iv(1, 0.9, 1.1), 9, 9),
		fixtureIntent("books-flat", pairbench.NoSignal, Table{18, 1, 0, 5}, 11, iv(1.1, 0.9, 1.3), 9, 9),
		fixtureIntent("weather-few", pairbench.Inconclusive, Table{3, 0, 0, 0}, 3, iv(1.9, 1.2, math.Inf(1)), 9, 9),
		fixtureIntent("books-fast", pairbench.Faster, Table{23, 1, 0, 0}, 22, iv(2.6, 2.1, 3.2), 9, 6),
		fixtureIntent("books-accurate", pairbench.MoreAccurate, Table{8, 14, 0, 2}, 5, iv(1.1, 0.7, 1.6), 2, 9),
		fixtureIntent("books-better", pairbench.Better, Table{10, 14, 0, 0}, 10, iv(3.1, 2.6, 3.9), 1, 3),
	}

	same := &intents[2]
	same.Class = pairbench.AnswerAgreement
	same.Agreement = &Agreement{Kind: pairbench.AgreeSame, Field: "titles"}
	same.Check = &AgreementCheck{Kind: pairbench.AgreeSame, Compared: 22, Differ: 4, Failed: true}

	fast := &intents[6]
	fast.Class = pairbench.AnswerAgreement
	fast.Agreement = &Agreement{Kind: pairbench.AgreeCheapest, Field: "price", Tolerance: 1}
	fast.Check = &AgreementCheck{Kind: pairbench.AgreeCheapest, Compared: 22, Unreadable: 1, Missed: ArmCount{Control: 2, Treatment: 1}}
	adopters := *fast.Speed
	adopters.Pairs, adopters.Faster, adopters.Slower = 20, 20, 0
	adopters.P = stats.SignTest(20, 0)
	adopters.Family, adopters.SpeedupAdj, adopters.Randomized = Family{PAdj: 1}, nil, false
	adopters.Speedup = stats.ExactInterval{Est: 2.8, Lo: 2.2, Hi: 3.5, Level: 0.959}
	fast.Adopters = &adopters
	fast.Treatment.Adoption = &Proportion{X: 21, N: 24, Interval: stats.Wilson(21, 24, fixtureZ)}
	fast.Control.NativeStarts = []int{3, 7}
	fast.Control.NativeTools = []string{"site_search"}
	fast.Control.Toolless = 1

	few := &intents[5]
	few.Class = pairbench.AnswerShapeOnly
	few.Domain = "weather.example"
	few.Pairs = PairCounts{Planned: 6, Seen: 6, Complete: 3, LostToAborts: 2, Missing: 1, LeftOut: ArmCount{Control: 2, Treatment: 3}, Aborts: ArmCount{Control: 1, Treatment: 4}}

	unused := &intents[3]
	unused.Domain = "weather.example"
	unused.Placebo = true
	unused.Treatment.Adoption = &Proportion{X: 0, N: 10, Interval: stats.Wilson(0, 10, fixtureZ)}

	// An intent with rows but no plan, no complete pair, and a hostile name.
	empty := stats.Wilson(0, 0, fixtureZ)
	intents = append(intents, Intent{
		ID: "<img src=x onerror=alert(1)>|`@octocat`", Domain: "evil.example", Unplanned: true,
		Label: pairbench.Inconclusive, Why: "no complete pair",
		Pairs:     PairCounts{Seen: 1, LostToAborts: 1, LeftOut: ArmCount{Treatment: 1}, Aborts: ArmCount{Treatment: 1}},
		Control:   ArmStats{Outcomes: map[pairbench.Outcome]int{}, Rate: empty},
		Treatment: ArmStats{Outcomes: map[pairbench.Outcome]int{}, Rate: empty, Adoption: &Proportion{Interval: empty}},
		Accuracy:  Accuracy{Share: stats.Share(0, 0, 0.05), P: 1, MidP: 1, Family: Family{PAdj: 1}, ShareAdj: &stats.ExactInterval{Est: math.NaN(), Hi: 1, Level: 1, TooFew: true}},
		MinP:      MinP{Speed: 1, Accuracy: 1},
	})

	labels := make([]pairbench.Label, 0, len(intents))
	counts := make(map[pairbench.Label]int)
	for _, in := range intents {
		labels = append(labels, in.Label)
		counts[in.Label]++
	}
	var hist []LabelCount
	for _, l := range pairbench.Labels {
		if counts[l] > 0 {
			hist = append(hist, LabelCount{Label: l, Count: counts[l]})
		}
	}

	return &Report{
		V: ReportVersion, RunID: "demo-2026-11-29", Model: Model{Name: "scripted/pairbench-scripted", Scripted: true},
		Alpha: 0.05, Z: fixtureZ, Seed: 7,
		Verdict: pairbench.Worst(labels...),
		Headline: &Headline{
			Label: pairbench.Worst(labels...), Why: "Across the intents treatment was significantly less accurate; speed showed no significant difference",
			Intents: 9,
			Speed: PooledSpeed{Pairs: 120, Complete: 181, P: 0.21, PConditional: 0.21, PComposite: 0.08, MinP: 1e-30,
				Level: 0.025, Faster: true},
			Accuracy: PooledAccuracy{TreatmentOnly: 20, ControlOnly: 52, Share: stats.Share(20, 52, 0.0125), P: 0.00021,
				Level: 0.0125, Significant: true},
			IntentsLevel: 0.025,
			Suspect:      "the placebo intent, which the registered tools cannot answer, differed in speed (signed-rank p 0.01): the harness, not the tools, may be making the difference",
			Claims:       []string{"books-slower: slower", "books-same: mixed", "books-fast: faster"},
		},
		Intents: intents,
		Adoption: []DomainAdoption{
			{Domain: "books.example", Trials: 3, Adopted: 3},
			{Domain: "weather.example", Trials: 3, Adopted: 0, Aborted: 1},
		},
		Tools: []ToolFailures{
			{Domain: "books.example", Tool: "find_books", Registered: true, Calls: 180, Failures: 3,
				Errors: []ErrorCount{{Error: "<script>alert('x')</script> | `rm -rf`", Count: 2}, {Error: "author\nnot found", Count: 1}}},
			{Domain: "books.example", Tool: "site_search", Calls: 4},
		},
		Run: RunChecks{
			Attempts: 420, SpendUSD: 4.56,
			Control:       ArmTotals{AgentMinutes: 151.2, Turns: 2310, SpendUSD: 2.4},
			Treatment:     ArmTotals{AgentMinutes: 88.9, Turns: 1402, SpendUSD: 1.9},
			Labels:        hist,
			MedianSpeedup: fixturePtr(1.1),
			Order: []OrderEffect{
				{Order: pairbench.AB, Pairs: 90, Delta: fixturePtr(0.07), BothCorrect: 62, Speedup: fixturePtr(1.4)},
				{Order: pairbench.BA, Pairs: 91, Delta: fixturePtr(0.05), BothCorrect: 62, Speedup: fixturePtr(1.5)},
			},
			StartDelay: StartDelay{Checked: 181, Apart: 2, Examples: []PairRef{{Intent: "books-fast", Pair: 4}, {Intent: "books-flat", Pair: 0}}},
			Caps:       []CapCount{{Cap: pairbench.CapTime, Control: 2}, {Cap: pairbench.CapTurns, Control: 1, Treatment: 1}, {Cap: pairbench.CapSpend}},
			Placebo: &Placebo{
				Intents:  []string{"weather-unused"},
				Table:    intents[3].Table,
				Accuracy: placeboAccuracy(intents[3].Accuracy),
				Speed:    intents[3].Speed,
			},
			Noise:     Noise{Expected: 0.27, Observed: 6},
			ShapeOnly: []string{"weather-few"},
		},
		SkippedRows: 1,
	}
}

// placeboAccuracy is acc as the placebo check reports it: outside the
// families.
func placeboAccuracy(acc Accuracy) Accuracy {
	acc.Family, acc.ShareAdj = Family{PAdj: 1}, nil
	return acc
}
