package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/stats"
)

// The Markdown and HTML renderings show the same content. newView turns a
// Report into that content as plain text (nothing escaped yet); each
// renderer escapes it for its own format.

// reportView is a Report as the renderings present it.
type reportView struct {
	RunID    string
	Model    string
	Source   string
	Scripted bool
	// Agent names the agent and its version ("" when the run did not).
	Agent string
	// Verdict is the worst label ("" when there are no intents); Counts the
	// label histogram in rank order, as text.
	Verdict pairbench.Label
	Counts  string
	Total   int
	Intents []intentView
	// Many is set when there are more intents than a reader scans in one
	// table (manyIntents); Groups are then the intents by label, worst
	// first, each in plan order.
	Many   bool
	Groups []labelGroup
	Tools  []toolView
	Adopt  []adoptionView
	// Footer is the run-level checks.
	Footer []viewFact
	// Incomplete says, when set, that pairs are still to run: the first
	// line of every rendering says so. Forced lists the plan changes a
	// resume was forced past.
	Incomplete string
	Forced     []string
	// Looks says at which look of a group-sequential design the report
	// decides, and at what level ("" for a run of one look).
	Looks string
	// MixedWebMCP says, when set, that some trials ran on the browser's own
	// WebMCP and others on the polyfill: every rendering flags it.
	MixedWebMCP string
	// Headline is what the verdict rests on.
	Headline headlineView
}

// viewFact is one named statement in a list.
type viewFact struct {
	Name string
	Text string
}

// manyIntents is the most intents the renderings show in one table: past
// it the HTML groups them by label, folded, and the Markdown lists them
// worst label first.
const manyIntents = 40

// labelGroup is the intents of one label.
type labelGroup struct {
	Label   pairbench.Label
	Intents []*intentView
}

// intentView is one intent: its summary row and its details.
type intentView struct {
	// Anchor is the id of its details in the HTML page.
	Anchor     string
	ID, Domain string
	// Placebo marks an intent the registered tools cannot answer: it is in
	// no family and not in the verdict, and is listed last.
	Placebo bool
	Label   pairbench.Label
	Why     string
	// N counts complete pairs, Planned the pairs planned (0 when unknown).
	N, Planned int
	// Summary cells. Share and Speedup carry the Holm-level intervals,
	// beside the Holm-adjusted p.
	Control, Treatment string
	Delta              string
	Share              string
	Speedup            string
	PAccuracy, PSpeed  string
	Adoption           string
	// Details.
	Facts []viewFact
	Arms  []armRow

	// Plot inputs: the Holm-level intervals of the discordant share and,
	// when there is speed, of the speedup (nil without them).
	ShareIv   *stats.ExactInterval
	SpeedupIv *stats.ExactInterval

	// Short forms for the HTML summary: each arm's share correct ("92%")
	// over its count ("22/24"), treatment's adoption likewise, and what the
	// filters select on: the outcomes seen in either arm's complete pairs,
	// aborted attempts, and pairs where exactly one arm was correct.
	ControlPct, TreatmentPct     string
	ControlCount, TreatmentCount string
	AdoptionPct, AdoptionCount   string
	Outcomes                     []string
	Aborted                      bool
	Discordant                   int
}

// armRow is one line of the per-arm table.
type armRow struct {
	Name               string
	Control, Treatment string
}

// toolView is one line of the per-tool failure table.
type toolView struct {
	Domain, Tool  string
	Registered    bool
	Calls         int
	Failures      int
	Errors        []ErrorCount
	NotRegistered int
}

// adoptionView is one domain's adoption stage.
type adoptionView struct {
	Domain                   string
	Trials, Adopted, Aborted int
}

// speedNote is said wherever speed is shown.
const speedNote = "Speed compares wall times over pairs where both trials were correct, so it is conditional on both arms succeeding. A speedup above 1× means treatment was faster."

// holmNote says where the summary's intervals and the details' differ.
const holmNote = "Each interval in this table is the exact inversion of the test beside it at the level Holm's procedure tested that intent at (its details give the level), so it excludes no difference (½ of the discordant pairs, 1×) exactly when the Holm-adjusted p is at most α; each intent's details also give its unadjusted 95% intervals with the raw p, which agree with each other but can exclude no difference where the adjusted ones do not."

// scriptedNote is said wherever a scripted model's results are shown.
const scriptedNote = "These results come from a scripted model, a deterministic program standing in for an LLM: they test the harness, not an agent, and say nothing about how a real model would do with these tools."

func newView(r *Report) reportView {
	v := reportView{
		RunID:    r.RunID,
		Model:    r.Model.Name,
		Agent:    r.Model.Agent,
		Source:   r.Source,
		Scripted: r.Model.Scripted,
		Verdict:  r.Verdict,
		Total:    len(r.Intents),
	}
	labels := make([]pairbench.Label, 0, len(r.Intents))
	for i := range r.Intents {
		labels = append(labels, r.Intents[i].Label)
		iv := newIntentView(r, &r.Intents[i])
		iv.Anchor = "intent-" + strconv.Itoa(i)
		v.Intents = append(v.Intents, iv)
	}
	if len(v.Intents) > manyIntents {
		v.Many = true
		for _, l := range byLabel(v.Intents, false) {
			if n := len(v.Groups); n == 0 || v.Groups[n-1].Label != l.Label {
				v.Groups = append(v.Groups, labelGroup{Label: l.Label})
			}
			g := &v.Groups[len(v.Groups)-1]
			g.Intents = append(g.Intents, l)
		}
	}
	if v.Verdict == "" {
		v.Verdict = pairbench.Worst(labels...)
	}
	v.Counts = viewLabelCounts(labels)
	for _, t := range r.Tools {
		v.Tools = append(v.Tools, toolView{t.Domain, t.Tool, t.Registered, t.Calls, t.Failures, t.Errors, t.NotRegistered})
	}
	for _, a := range r.Adoption {
		v.Adopt = append(v.Adopt, adoptionView{a.Domain, a.Trials, a.Adopted, a.Aborted})
	}
	v.Footer = viewRunFacts(r)
	v.Headline = newHeadlineView(r)
	if r.Looks != nil {
		v.Looks = r.Looks.note(r.Alpha)
	}
	if in := r.Incomplete; in != nil {
		v.Incomplete = fmt.Sprintf("%d of %d planned %s not run yet", in.Pending, in.Planned, pluralize(in.Planned, "pair"))
		if in.Why != "" {
			v.Incomplete += " (" + in.Why + ")"
		}
	}
	v.Forced = r.Forced
	if w := r.Run.WebMCP; w.Mixed() {
		where := " (each intent's trials all on one)"
		if mixed := r.Run.MixedIntents; len(mixed) > 0 {
			where = fmt.Sprintf(" (both within %s %s)", pluralize(len(mixed), "intent"), showList(mixed, 10))
		}
		v.MixedWebMCP = fmt.Sprintf("%d %s ran on the browser's own WebMCP and %d on pairbench's polyfill%s. "+
			"The registered tools went through different implementations, which may behave differently: compare intents run on the same one.",
			w.Native, pluralize(w.Native, "trial"), w.Polyfill, where)
	}
	return v
}

// worstFirst returns the intents ordered by label, worst first (labels not
// in pairbench.Labels last), each label's in plan order; placebo intents
// come after all the others.
func worstFirst(intents []intentView) []*intentView { return byLabel(intents, true) }

// byLabel returns the intents ordered by label, worst first, each label's
// in plan order; with placeboLast, placebo intents after all the others.
func byLabel(intents []intentView, placeboLast bool) []*intentView {
	out := make([]*intentView, len(intents))
	for i := range intents {
		out[i] = &intents[i]
	}
	rank := func(l pairbench.Label) int {
		if r := l.Rank(); r >= 0 {
			return r
		}
		return len(pairbench.Labels)
	}
	slices.SortStableFunc(out, func(x, y *intentView) int {
		if placeboLast && x.Placebo != y.Placebo {
			return compareBool(x.Placebo, y.Placebo)
		}
		return cmp.Compare(rank(x.Label), rank(y.Label))
	})
	return out
}

// incompleteNote is said under the first line of an incomplete run's report.
const incompleteNote = "This run is not finished: the labels below come from the pairs done so far and are not its verdict. Resume the run (or merge every shard) for the verdict."

// forcedNote introduces the plan changes a resume was forced past.
const forcedNote = "This run was resumed with --force past changes to its plan, so its trials do not all come from one plan:"

// viewLabelCounts returns "1 less accurate, 2 faster" in rank order.
func viewLabelCounts(labels []pairbench.Label) string {
	n := make(map[pairbench.Label]int)
	for _, l := range labels {
		n[l]++
	}
	var parts []string
	for _, l := range pairbench.Labels {
		if n[l] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[l], l))
		}
	}
	if n[""] > 0 {
		parts = append(parts, fmt.Sprintf("%d unlabelled", n[""]))
	}
	return strings.Join(parts, ", ")
}

func newIntentView(r *Report, in *Intent) intentView {
	acc := in.Accuracy
	v := intentView{
		ID: in.ID, Domain: in.Domain, Label: in.Label, Why: in.Why, Placebo: in.Placebo,
		N:         in.Pairs.Complete,
		Planned:   in.Pairs.Planned,
		Control:   showRate(in.Control.Correct, in.Control.N, in.Control.Rate),
		Treatment: showRate(in.Treatment.Correct, in.Treatment.N, in.Treatment.Rate),
		Delta:     showOptPP(acc.Delta),
		Share:     undefDash,
		Speedup:   undefDash,
		PAccuracy: showFamilyP(acc.Family, acc.Discordant > 0),
		PSpeed:    undefDash,
		Adoption:  undefDash,
	}
	if acc.ShareAdj != nil && acc.Discordant > 0 {
		v.Share = showShare(discordant(in.Table), *acc.ShareAdj)
		v.ShareIv = acc.ShareAdj
	}
	if s := in.Speed; s != nil {
		v.PSpeed = showFamilyP(s.Family, true)
		if s.SpeedupAdj != nil {
			v.Speedup = showExactSpeedup(*s.SpeedupAdj)
			v.SpeedupIv = s.SpeedupAdj
		}
	}
	if a := in.Treatment.Adoption; a != nil {
		v.Adoption = showRate(a.X, a.N, a.Interval)
	}
	v.ControlPct, v.ControlCount = showShort(in.Control.Correct, in.Control.N, in.Control.Rate)
	v.TreatmentPct, v.TreatmentCount = showShort(in.Treatment.Correct, in.Treatment.N, in.Treatment.Rate)
	v.AdoptionPct, v.AdoptionCount = undefDash, ""
	if a := in.Treatment.Adoption; a != nil {
		v.AdoptionPct, v.AdoptionCount = showShort(a.X, a.N, a.Interval)
	}
	for _, o := range pairbench.Outcomes {
		if in.Control.Outcomes[o]+in.Treatment.Outcomes[o] > 0 {
			v.Outcomes = append(v.Outcomes, string(o))
		}
	}
	v.Aborted = in.Pairs.Aborts.Control+in.Pairs.Aborts.Treatment > 0
	v.Discordant = acc.Discordant
	v.Facts = viewIntentFacts(r, in)
	v.Arms = viewArmRows(&in.Control, &in.Treatment, r.Model.Scripted)
	return v
}

// discordant returns the discordant counts (b, c) of t for showShare.
func discordant(t Table) [2]int { return [2]int{t.TreatmentOnly, t.ControlOnly} }

// showFamilyP is the Holm-adjusted p, or why there is none.
func showFamilyP(f Family, ran bool) string {
	switch {
	case !ran:
		return undefDash
	case !f.Tested:
		return "not tested"
	}
	return showP(f.PAdj)
}

func viewIntentFacts(r *Report, in *Intent) []viewFact {
	var f []viewFact
	add := func(name, format string, args ...any) { f = append(f, viewFact{name, fmt.Sprintf(format, args...)}) }

	if in.Why != "" {
		add("Why", "%s", in.Why)
	}
	setup := fmt.Sprintf("domain %s; answer class %s", orDash(in.Domain), orDash(string(in.Class)))
	if in.Placebo {
		setup += "; placebo (the registered tools cannot answer it)"
	}
	if in.Unplanned {
		setup += "; not in the plan (rows only)"
	}
	add("Setup", "%s; registered tools: %s", setup, showList(in.Tools, 20))
	if a := in.Agreement; a != nil {
		add("Agreement", "%s", viewAgreement(a))
	}

	p := in.Pairs
	add("Pairs", "%d planned, %d seen, %d complete, %d lost to aborts, %d missing; left out: control %d, treatment %d; aborted attempts: control %d, treatment %d",
		p.Planned, p.Seen, p.Complete, p.LostToAborts, p.Missing, p.LeftOut.Control, p.LeftOut.Treatment, p.Aborts.Control, p.Aborts.Treatment)
	if len(p.EnvDiffers) > 0 {
		pairs := make([]string, 0, len(p.EnvDiffers))
		for _, n := range p.EnvDiffers {
			pairs = append(pairs, strconv.Itoa(n))
		}
		add("Not counted", "pairs %s: their arms ran in different WebMCP environments (browser version, switches, or the browser's own WebMCP in one arm and the polyfill in the other; see each row's webmcp_impl and webmcp_env)",
			showList(pairs, 10))
	}

	t, acc := in.Table, in.Accuracy
	add("Accuracy", "both correct %d, treatment only %d, control only %d, neither %d; Δ %s; %s",
		t.BothCorrect, t.TreatmentOnly, t.ControlOnly, t.Neither, showOptPP(acc.Delta), viewShareTest(acc, t))

	if s := in.Speed; s != nil {
		add("Speed", "%s", viewSpeed(s))
	} else {
		add("Speed", "no pair where both trials were correct")
	}
	if s := in.Adopters; s != nil {
		add("Adopters only", "%s (pairs whose treatment trial used a registered tool; the agent chose these, so they are not randomized, and this feeds no label)", viewSpeed(s))
	}
	if c := in.Check; c != nil {
		add("Agreement check", "%s", viewCheck(c))
	}
	f = append(f, scoreFacts(in)...)
	add("Attainable", "smallest Holm-adjusted p these pairs could reach: speed %s, accuracy %s (α = %s); chance of a label from noise alone: %s",
		showP(in.MinP.Speed), showP(in.MinP.Accuracy), showNum(r.Alpha), showP(in.NoiseProb))
	w := in.Control.WebMCP
	w.plus(in.Treatment.WebMCP)
	if w.Mixed() {
		add("Mixed WebMCP", "%d %s on the browser's own WebMCP, %d on the polyfill: the registered tools went through different implementations",
			w.Native, pluralize(w.Native, "trial"), w.Polyfill)
	}
	return f
}

// viewShareTest describes the accuracy test: the discordant share with its
// interval beside the raw p, then the family's.
func viewShareTest(acc Accuracy, t Table) string {
	if acc.Discordant == 0 {
		return "no discordant pair, so no test"
	}
	bc := discordant(t)
	s := fmt.Sprintf("treatment's share of the %d discordant %s %s (exact, at least %s coverage); exact McNemar p %s (mid-p %s)",
		acc.Discordant, pluralize(acc.Discordant, "pair"), showShare(bc, acc.Share), showPct(acc.Share.Level), showP(acc.P), showP(acc.MidP))
	return s + "; " + viewFamily(acc.Family, acc.ShareAdj, func(iv stats.ExactInterval) string { return showShare(bc, iv) })
}

// viewFamily describes an intent's part in its family.
func viewFamily(f Family, adj *stats.ExactInterval, show func(stats.ExactInterval) string) string {
	if !f.Tested {
		return "not tested after multiplicity (its pairs could not reach the level the family needs)"
	}
	s := "Holm-adjusted p " + showP(f.PAdj)
	if adj != nil {
		s += fmt.Sprintf(", interval at the Holm level %s: %s", showLevel(1-f.Threshold), show(*adj))
	}
	return s
}

func viewAgreement(a *Agreement) string {
	field := "the whole answer"
	if a.Field != "" {
		field = a.Field
	}
	if a.Kind == pairbench.AgreeCheapest {
		return fmt.Sprintf("cheapest on %s, tolerance %s", field, showNum(a.Tolerance))
	}
	return fmt.Sprintf("%s on %s", a.Kind, field)
}

func viewSpeed(s *Speed) string {
	out := fmt.Sprintf("%d both-correct pairs: treatment faster in %d, slower in %d, %d ties; median %s control vs %s treatment (ratio of medians %s); typical speedup %s (Hodges–Lehmann, exact Wilcoxon signed-rank interval, %s coverage); signed-rank p %s",
		s.Pairs, s.Faster, s.Slower, s.Ties, showSecs(s.MedianControl), showSecs(s.MedianTreatment), showOptTimes(s.RatioOfMedians),
		showExactSpeedup(s.Speedup), showLevel(s.Speedup.Level), showP(s.P))
	if s.SpeedupAdj != nil {
		out += "; " + viewFamily(s.Family, s.SpeedupAdj, showExactSpeedup)
	}
	if f := s.FromFirstRequest; f != nil {
		out += fmt.Sprintf("; from the first model request (the agents' start-up left out): median %s control vs %s treatment (ratio of medians %s), typical speedup %s",
			showSecs(f.MedianControl), showSecs(f.MedianTreatment), showOptTimes(f.RatioOfMedians), showOptTimes(finite(f.Speedup)))
	}
	return out
}

func viewCheck(c *AgreementCheck) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d both-correct pairs compared, %d unreadable", c.Kind, c.Compared, c.Unreadable)
	if c.Kind == pairbench.AgreeCheapest {
		fmt.Fprintf(&b, "; missed the cheapest: control %d, treatment %d", c.Missed.Control, c.Missed.Treatment)
	} else {
		fmt.Fprintf(&b, "; answers differ in %d", c.Differ)
	}
	if c.Failed {
		b.WriteString("; failed: a speed label becomes mixed")
	} else {
		b.WriteString("; passed")
	}
	return b.String()
}

// ShowCost shows a cost as the report does: see costFormat.
func ShowCost(cost float64, scripted bool) string { return fmt.Sprintf(costFormat(scripted), cost) }

// costFormat formats a cost: in dollars, or as notional units for a
// scripted model, whose prices stand in for a provider's and bill nothing.
func costFormat(scripted bool) string {
	if scripted {
		return "%.4f notional"
	}
	return "$%.4f"
}

func viewArmRows(c, t *ArmStats, scripted bool) []armRow {
	rows := []armRow{
		{"n", strconv.Itoa(c.N), strconv.Itoa(t.N)},
		{"correct", showRate(c.Correct, c.N, c.Rate), showRate(t.Correct, t.N, t.Rate)},
		{"wrong / malformed / crashed / timeout", viewOutcomes(c.Outcomes), viewOutcomes(t.Outcomes)},
		{"median wall time, correct", showOptSecs(c.MedianWallCorrect), showOptSecs(t.MedianWallCorrect)},
		{"median wall time, all", showOptSecs(c.MedianWall), showOptSecs(t.MedianWall)},
		{"minutes per correct answer", showOpt(c.MinutesPerCorrect, "%.2f"), showOpt(t.MinutesPerCorrect, "%.2f")},
		{"median turns", showOpt(c.MedianTurns, "%.1f"), showOpt(t.MedianTurns, "%.1f")},
		{"median input tokens", showOpt(c.MedianInputTokens, "%.0f"), showOpt(t.MedianInputTokens, "%.0f")},
		{"median cost", showOpt(c.MedianCost, costFormat(scripted)), showOpt(t.MedianCost, costFormat(scripted))},
		{"used a registered tool", viewAdoption(c.Adoption), viewAdoption(t.Adoption)},
		{"correct without a tool call", strconv.Itoa(c.Toolless), strconv.Itoa(t.Toolless)},
	}
	if len(c.NativeStarts)+len(t.NativeStarts) > 0 {
		rows = append(rows, armRow{"started with the page's own tools", viewNative(c), viewNative(t)})
	}
	if len(c.BrowserRefused)+len(t.BrowserRefused) > 0 {
		rows = append(rows, armRow{"browser requests refused (browser-refusals.jsonl)", viewPairs(c.BrowserRefused), viewPairs(t.BrowserRefused)})
	}
	if c.WebMCP != (WebMCPCount{}) || t.WebMCP != (WebMCPCount{}) {
		rows = append(rows, armRow{"WebMCP of the start page", viewWebMCP(c.WebMCP, c.N), viewWebMCP(t.WebMCP, t.N)})
	}
	return rows
}

// viewWebMCP counts n trials by whose WebMCP their start page had.
func viewWebMCP(w WebMCPCount, n int) string {
	var parts []string
	for _, p := range []struct {
		name string
		n    int
	}{{"native", w.Native}, {"polyfill", w.Polyfill}, {"not recorded", n - w.Native - w.Polyfill}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", p.name, p.n))
		}
	}
	return orDash(strings.Join(parts, " · "))
}

func viewPairs(pairs []int) string {
	if len(pairs) == 0 {
		return "none"
	}
	s := make([]string, len(pairs))
	for i, p := range pairs {
		s[i] = strconv.Itoa(p)
	}
	return "pairs " + showList(s, 10)
}

func viewAdoption(p *Proportion) string {
	if p == nil {
		return "—"
	}
	return showRate(p.X, p.N, p.Interval)
}

func viewNative(a *ArmStats) string {
	if len(a.NativeStarts) == 0 {
		return "none"
	}
	pairs := make([]string, 0, len(a.NativeStarts))
	for _, p := range a.NativeStarts {
		pairs = append(pairs, strconv.Itoa(p))
	}
	return fmt.Sprintf("pairs %s (%s)", showList(pairs, 10), showList(a.NativeTools, 10))
}

func viewOutcomes(m map[pairbench.Outcome]int) string {
	return fmt.Sprintf("%d / %d / %d / %d", m[pairbench.Wrong], m[pairbench.Malformed], m[pairbench.Crashed], m[pairbench.Timeout])
}

// viewRunFacts is the footer: the run-level checks.
func viewRunFacts(r *Report) []viewFact {
	var f []viewFact
	add := func(name, format string, args ...any) { f = append(f, viewFact{name, fmt.Sprintf(format, args...)}) }
	rc := r.Run

	model := orDash(r.Model.Name)
	if r.Model.Scripted {
		model += ": scripted model, not an LLM. " + scriptedNote
	}
	if r.Model.Agent != "" {
		add("Agent", "%s", r.Model.Agent)
	}
	add("Model", "%s", model)
	add("Statistics", "α = %s; speed: exact Wilcoxon signed-rank test on the pairs' log time ratios with the Hodges–Lehmann speedup; accuracy: exact McNemar test with treatment's share of the discordant pairs (Clopper–Pearson); Holm across intents separately for speed and accuracy, over the intents whose pairs could reach significance (Tarone); Wilson intervals per arm (z = %.4f)",
		showNum(r.Alpha), r.Z)
	add("Intervals", "%s", holmNote)
	add("Speed", "%s", speedNote)
	cost := costFormat(r.Model.Scripted)
	spend := fmt.Sprintf(cost, rc.SpendUSD)
	if r.Model.Scripted {
		spend += " (the scripted model's stand-in prices: nothing was billed)"
	}
	add("Spend", "%s over %d attempts (aborted and adoption trials included)", spend, rc.Attempts)
	if rc.Judge != nil {
		add("Judge agreement", "%s, over every judged intent", showJudgeAgreement(*rc.Judge))
	}
	add("Complete pairs", "control %.1f agent-minutes, %d turns, "+cost+"; treatment %.1f agent-minutes, %d turns, "+cost,
		rc.Control.AgentMinutes, rc.Control.Turns, rc.Control.SpendUSD, rc.Treatment.AgentMinutes, rc.Treatment.Turns, rc.Treatment.SpendUSD)

	var hist []string
	for _, lc := range rc.Labels {
		hist = append(hist, fmt.Sprintf("%s %d", lc.Label, lc.Count))
	}
	add("Labels", "%s", orDash(strings.Join(hist, ", ")))
	if rc.MedianSpeedup != nil {
		add("Median speedup", "%s over intents with speed", showTimes(*rc.MedianSpeedup))
	} else {
		add("Median speedup", "— (no intent has a both-correct pair)")
	}

	var orders []string
	for _, o := range rc.Order {
		d, s := "—", "—"
		if o.Delta != nil {
			d = showSignedPP(*o.Delta)
		}
		if o.Speedup != nil {
			s = showTimes(*o.Speedup)
		}
		orders = append(orders, fmt.Sprintf("%s: %d pairs, Δ %s, speedup %s over %d both-correct", o.Order, o.Pairs, d, s, o.BothCorrect))
	}
	add("Order check", "%s", orDash(strings.Join(orders, "; ")))

	sd := rc.StartDelay
	delay := fmt.Sprintf("%d of %d complete pairs launched their agents more than 1 s apart", sd.Apart, sd.Checked)
	if len(sd.Examples) > 0 {
		refs := make([]string, 0, len(sd.Examples))
		for _, e := range sd.Examples {
			refs = append(refs, fmt.Sprintf("%s pair %d", e.Intent, e.Pair))
		}
		delay += " (" + showList(refs, 10) + ")"
	}
	add("Start delay", "%s", delay)

	var caps []string
	for _, c := range rc.Caps {
		caps = append(caps, fmt.Sprintf("%s: control %d, treatment %d", c.Cap, c.Control, c.Treatment))
	}
	add("Caps hit", "%s", orDash(strings.Join(caps, "; ")))

	if pl := rc.Placebo; pl != nil {
		acc := pl.Accuracy
		text := fmt.Sprintf("%s: Δ %s", showList(pl.Intents, 10), showOptPP(acc.Delta))
		if acc.Discordant > 0 {
			text += fmt.Sprintf(", treatment's share of the discordant pairs %s, McNemar p %s", showShare(discordant(pl.Table), acc.Share), showP(acc.P))
		}
		if pl.Speed != nil {
			text += fmt.Sprintf(", typical speedup %s, signed-rank p %s", showExactSpeedup(pl.Speed.Speedup), showP(pl.Speed.P))
		}
		add("Placebo", "%s (an effect here points at the harness, not the tools)", text)
	}
	if w := rc.WebMCP; w != (WebMCPCount{}) {
		text := fmt.Sprintf("trials of complete pairs, both arms, by whose WebMCP the start page had: %s", viewWebMCP(w, 2*rc.StartDelay.Checked))
		if w.Mixed() {
			text = "mixed: " + text + "; intents with both: " + showList(rc.MixedIntents, 10)
		}
		add("WebMCP", "%s", text)
	}
	add("Noise", "%.2f labels expected from noise alone; %d observed", rc.Noise.Expected, rc.Noise.Observed)
	if len(rc.ShapeOnly) > 0 {
		add("Shape only", "labels from intents whose answers are checked by shape only: %s", showList(rc.ShapeOnly, 10))
	}
	if r.SkippedRows > 0 {
		add("Skipped rows", "%d %s left out: invalid, or not trials of the plan (pairbench report warns of each kind)", r.SkippedRows, pluralize(r.SkippedRows, "row"))
	}
	return f
}

// Number formatting. Every function returns "—" for an undefined value.

const undefDash = "—"

func isUndef(x float64) bool { return math.IsNaN(x) }

// showShort is a rate as "70%" and "7/10" ("—" and "0/0" with no trials).
func showShort(x, n int, iv stats.Interval) (pct, count string) {
	count = fmt.Sprintf("%d/%d", x, n)
	if n == 0 {
		return undefDash, count
	}
	return showPct(iv.Est), count
}

// showRate is "7/10 70% [40–89%]".
func showRate(x, n int, iv stats.Interval) string {
	if n == 0 {
		return fmt.Sprintf("%d/%d", x, n)
	}
	return fmt.Sprintf("%d/%d %s [%s–%s%%]", x, n, showPct(iv.Est), showPctOut(iv.Lo, false), showPctOut(iv.Hi, true))
}

func showPct(x float64) string {
	if isUndef(x) {
		return undefDash
	}
	return showPctNum(x) + "%"
}

func showPctNum(x float64) string {
	if isUndef(x) {
		return undefDash
	}
	return strconv.FormatFloat(math.Round(100*x), 'f', 0, 64)
}

// showOptPP is "+20 pp", or a dash when undefined.
func showOptPP(x *float64) string {
	if x == nil {
		return undefDash
	}
	return showSignedPP(*x)
}

// showShare is "14/20 70% (46–88%)": treatment's discordant pairs, their
// share and its interval, parentheses marking open bounds; or "too few
// pairs".
func showShare(bc [2]int, iv stats.ExactInterval) string {
	d := bc[0] + bc[1]
	if d == 0 {
		return undefDash
	}
	head := fmt.Sprintf("%d/%d %s", bc[0], d, showPct(iv.Est))
	if iv.TooFew {
		return head + " (too few pairs)"
	}
	lo, hi := roundOut(100*iv.Lo, 0, false), roundOut(100*iv.Hi, 0, true)
	open, close := brackets(iv, lo/100, hi/100, 0.5)
	return fmt.Sprintf("%s %s%s–%s%%%s", head, open, showFixed(lo, 0), showFixed(hi, 0), close)
}

// showLevel is a coverage level: "95%", "99.75%".
func showLevel(x float64) string {
	if isUndef(x) {
		return undefDash
	}
	return strconv.FormatFloat(100*x, 'g', 4, 64) + "%"
}

func showSignedPP(x float64) string { return showSigned(100*x) + " pp" }

func showSigned(x float64) string {
	switch {
	case isUndef(x):
		return undefDash
	case math.IsInf(x, 1):
		return "+∞"
	case math.IsInf(x, -1):
		return "−∞"
	}
	x = math.Round(x)
	if x == 0 {
		return "0"
	}
	s := strconv.FormatFloat(x, 'f', 0, 64)
	if x > 0 {
		return "+" + s
	}
	return "−" + s[1:]
}

// showExactSpeedup is "2.10× [1.80, 2.50]", parentheses marking open
// bounds; or "2.10× (too few pairs)".
func showExactSpeedup(e stats.ExactInterval) string {
	if isUndef(e.Est) {
		return undefDash
	}
	if e.TooFew {
		return showTimes(e.Est) + " (too few pairs)"
	}
	lo, hi := roundOut(e.Lo, 2, false), roundOut(e.Hi, 2, true)
	open, close := brackets(e, lo, hi, 1)
	return fmt.Sprintf("%s %s%s, %s%s", showTimes(e.Est), open, showBound(lo, 2), showBound(hi, 2), close)
}

// Printed intervals are rounded outward, so what is printed holds the
// whole interval; and a rounded bound that lands on no difference (null)
// while the interval excludes it is printed open, so the printed interval
// excludes no difference exactly when the interval does, which is when the
// label claims a difference.

// roundOut rounds x to digits decimals, up or down: never inward.
func roundOut(x float64, digits int, up bool) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	scale := math.Pow10(digits)
	k := math.Round(x * scale)
	switch {
	case up && k/scale < x:
		k++
	case !up && k/scale > x:
		k--
	}
	return k / scale
}

// brackets returns the opening and closing brackets of iv printed with the
// outward-rounded bounds lo and hi: open where iv's bound is open (the
// rounded bound lies at or beyond it, so leaving the rounded value out
// still holds everything iv holds), or where the rounded bound is null but
// iv excludes null.
func brackets(iv stats.ExactInterval, lo, hi, null float64) (open, close string) {
	open, close = "[", "]"
	if iv.LoOpen || (lo == null && !iv.Contains(null)) {
		open = "("
	}
	if iv.HiOpen || (hi == null && !iv.Contains(null)) {
		close = ")"
	}
	return open, close
}

// showFixed is x with digits decimals.
func showFixed(x float64, digits int) string { return strconv.FormatFloat(x, 'f', digits, 64) }

// showBound is an interval's bound with digits decimals, "∞" when unbounded.
func showBound(x float64, digits int) string {
	if math.IsInf(x, 1) {
		return "∞"
	}
	return showFixed(x, digits)
}

// showPctOut is a rate's bound in percent, rounded outward (up for an
// upper bound).
func showPctOut(x float64, up bool) string {
	if isUndef(x) {
		return undefDash
	}
	return showFixed(roundOut(100*x, 0, up), 0)
}

func showTimes(x float64) string { return showRatio(x) + "×" }

func showOptTimes(x *float64) string {
	if x == nil {
		return undefDash
	}
	return showTimes(*x)
}

func showRatio(x float64) string {
	switch {
	case isUndef(x):
		return undefDash
	case math.IsInf(x, 1):
		return "∞"
	case math.IsInf(x, -1):
		return "−∞"
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// showP is p to two significant digits ("0.016", "1.9e-06").
func showP(p float64) string {
	if isUndef(p) {
		return undefDash
	}
	return strconv.FormatFloat(p, 'g', 2, 64)
}

func showSecs(x float64) string {
	if isUndef(x) {
		return undefDash
	}
	return strconv.FormatFloat(x, 'f', 1, 64) + " s"
}

func showOptSecs(x *float64) string {
	if x == nil {
		return undefDash
	}
	return showSecs(*x)
}

func showOpt(x *float64, format string) string {
	if x == nil || isUndef(*x) {
		return undefDash
	}
	return fmt.Sprintf(format, *x)
}

func showNum(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func orDash(s string) string {
	if s == "" {
		return undefDash
	}
	return s
}

// showList joins up to max items and says how many more there are.
func showList(items []string, max int) string {
	if len(items) == 0 {
		return "none"
	}
	if len(items) <= max {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:max], ", "), len(items)-max)
}
