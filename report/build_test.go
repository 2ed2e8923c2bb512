package report

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/stats"
)

// trial is one arm's side of a test pair.
type trial struct {
	outcome pairbench.Outcome
	wall    float64
	adopted bool
}

func row(intent string, pair int, order pairbench.Order, arm pairbench.Arm, attempt int, tr trial) pairbench.Row {
	return pairbench.Row{
		V: pairbench.RowVersion, RunID: "t", Intent: intent, Domain: "books.example",
		Stage: pairbench.StagePair, Pair: pair, Order: order, Arm: arm, Attempt: attempt,
		Outcome: tr.outcome, WallSeconds: tr.wall, Adopted: tr.adopted, Turns: 4, CostUSD: 0.01,
	}
}

// pairRows returns a pair's two rows, first attempt, in the order they ran.
func pairRows(intent string, pair int, c, t trial) []pairbench.Row {
	order := pairbench.AB
	if pair%2 == 1 {
		order = pairbench.BA
	}
	cr, tr := row(intent, pair, order, pairbench.Control, 1, c), row(intent, pair, order, pairbench.Treatment, 1, t)
	if order == pairbench.BA {
		return []pairbench.Row{tr, cr}
	}
	return []pairbench.Row{cr, tr}
}

func ok(wall float64) trial    { return trial{pairbench.Correct, wall, true} }
func wrong(wall float64) trial { return trial{pairbench.Wrong, wall, true} }

// workedExample is the predecessor's example: 10 pairs, (a,b,c,d) =
// (7,2,0,1), treatment faster in all 7 both-correct pairs, control median
// 130 s and treatment median 50 s.
func workedExample(intent string) []pairbench.Row {
	tc := []float64{130, 120, 140, 150, 125, 110, 145}
	tt := []float64{50, 40, 55, 60, 45, 48, 58}
	var rows []pairbench.Row
	for i := range tc {
		rows = append(rows, pairRows(intent, i, ok(tc[i]), ok(tt[i]))...)
	}
	rows = append(rows, pairRows(intent, 7, wrong(200), ok(70))...)
	rows = append(rows, pairRows(intent, 8, wrong(180), ok(65))...)
	rows = append(rows, pairRows(intent, 9, wrong(210), wrong(90))...)
	return rows
}

func planFor(ids ...string) Plan {
	p := Plan{RunID: "t", Seed: 1}
	for _, id := range ids {
		p.Intents = append(p.Intents, PlanIntent{ID: id, Domain: "books.example", Class: pairbench.AnswerPinned, Pairs: 10})
	}
	return p
}

func TestBuildWorkedExample(t *testing.T) {
	rep := Build(planFor("books"), workedExample("books"))
	require.Len(t, rep.Intents, 1)
	in := rep.Intents[0]
	assert.Equal(t, Table{7, 2, 0, 1}, in.Table)
	require.NotNil(t, in.Speed)
	assert.Equal(t, 7, in.Speed.Faster)
	assert.InDelta(t, 2.6, *in.Speed.RatioOfMedians, 1e-12, "ratio of medians")
	assert.Equal(t, 0.0156, round4(in.Speed.P), "signed-rank p: all 7 pairs favour treatment, 2/2⁷")
	assert.Equal(t, in.Speed.P, in.Speed.PAdj, "one intent: Holm changes nothing")
	assert.Equal(t, pairbench.Faster, in.Label, in.Why)
	assert.Equal(t, pairbench.Faster, rep.Verdict)
	assert.Equal(t, 0.2, round4(*in.Accuracy.Delta))
	assert.Equal(t, 1.0, in.Accuracy.Share.Est, "both discordant pairs favour treatment")
	assert.Equal(t, 0.1581, round4(in.Accuracy.Share.Lo), "Clopper–Pearson for 2 of 2")
	assert.True(t, in.Accuracy.Share.TooFew, "2 discordant pairs can never reach α")
	assert.Equal(t, 0.5, in.Accuracy.P, "McNemar on (2, 0)")
	assert.False(t, in.Accuracy.Tested, "and so it is not tested in the family")
	assert.Equal(t, 7, in.Control.Correct)
	assert.Equal(t, 9, in.Treatment.Correct)
	assert.Equal(t, stats.Wilson(9, 10, rep.Z), in.Treatment.Rate)
	assert.Equal(t, 10, in.Treatment.Adoption.X)
	assert.Nil(t, in.Control.Adoption)
	assert.Nil(t, in.Adopters, "treatment used tools in every pair")
	assert.False(t, in.Speed.Speedup.Contains(1), "the exact interval excludes 1 since p ≤ α")
	assert.False(t, in.Speed.SpeedupAdj.Contains(1), "and so does the Holm-level one")
	assert.Equal(t, 10, in.Pairs.Complete)
	assert.Equal(t, ReportVersion, rep.V)
	assert.Equal(t, 20, rep.Run.Attempts)
	assert.InDelta(t, 0.2, rep.Run.SpendUSD, 1e-9)
}

func TestBuildPairAssembly(t *testing.T) {
	const id = "books"
	var rows []pairbench.Row
	// Pair 0: treatment aborted, the pair reran whole; attempt 2 counts.
	rows = append(rows,
		row(id, 0, pairbench.AB, pairbench.Treatment, 2, ok(30)),
		row(id, 0, pairbench.AB, pairbench.Control, 1, wrong(99)),
		row(id, 0, pairbench.AB, pairbench.Treatment, 1, trial{outcome: pairbench.Aborted}),
		row(id, 0, pairbench.AB, pairbench.Control, 2, ok(60)),
	)
	// Pair 1: treatment aborted and was not rerun yet.
	rows = append(rows,
		row(id, 1, pairbench.BA, pairbench.Treatment, 1, trial{outcome: pairbench.Aborted}),
		row(id, 1, pairbench.BA, pairbench.Control, 1, ok(60)),
	)
	// Pair 2: only control has a row.
	rows = append(rows, row(id, 2, pairbench.AB, pairbench.Control, 1, ok(60)))
	// An adoption-stage trial is not a pair; an invalid row is skipped.
	adopt := row(id, 0, "", pairbench.Treatment, 1, ok(20))
	adopt.Stage = pairbench.StageAdoption
	bad := row(id, 3, pairbench.AB, pairbench.Control, 1, ok(1))
	bad.V = 0
	rows = append(rows, adopt, bad)

	plan := planFor(id)
	plan.Intents[0].Pairs = 4
	rep := Build(plan, rows)
	in := rep.Intents[0]
	assert.Equal(t, PairCounts{
		Planned: 4, Seen: 3, Complete: 1, LostToAborts: 1, Missing: 2,
		LeftOut: ArmCount{Control: 0, Treatment: 2},
		Aborts:  ArmCount{Control: 0, Treatment: 2},
	}, in.Pairs)
	assert.Equal(t, Table{BothCorrect: 1}, in.Table, "pair 0's last attempts are both correct")
	assert.Equal(t, 60.0, in.Speed.MedianControl)
	assert.Equal(t, 1, rep.SkippedRows)
	assert.Equal(t, 8, rep.Run.Attempts, "every valid attempt, aborted and adoption included")
	assert.Equal(t, []DomainAdoption{{Domain: "books.example", Trials: 1, Adopted: 1}}, rep.Adoption)
	assert.Equal(t, 1, rep.Run.Control.Turns/4, "run totals cover complete pairs only")
}

func TestBuildUnplannedAndEmptyIntents(t *testing.T) {
	rows := workedExample("zeta")
	rep := Build(planFor("alpha"), rows)
	require.Len(t, rep.Intents, 2)
	assert.Equal(t, "alpha", rep.Intents[0].ID)
	assert.Equal(t, pairbench.Inconclusive, rep.Intents[0].Label, "no pairs at all")
	assert.Equal(t, 10, rep.Intents[0].Pairs.Missing)
	assert.Equal(t, "zeta", rep.Intents[1].ID)
	assert.True(t, rep.Intents[1].Unplanned)
	assert.Equal(t, pairbench.Faster, rep.Intents[1].Label)
}

func TestBuildInconclusiveIsDecidedUpFront(t *testing.T) {
	var rows []pairbench.Row
	// Five pairs, treatment faster in all: 2·½⁵ = 0.0625 can never be ≤ .05.
	for i := range 5 {
		rows = append(rows, pairRows("few", i, ok(100), ok(40))...)
	}
	// Thirty pairs with no difference beyond noise: significance was
	// attainable, nothing was significant.
	r := rand.New(rand.NewPCG(1, 1))
	for i := range 30 {
		rows = append(rows, pairRows("many", i, ok(50+r.Float64()*20), ok(50+r.Float64()*20))...)
	}
	rep := Build(planFor("few", "many"), rows)
	few, many := rep.Intents[0], rep.Intents[1]
	assert.Equal(t, pairbench.Inconclusive, few.Label, few.Why)
	assert.Equal(t, 1.0, few.MinP.Speed, "at best 0.0625: not tested")
	assert.False(t, few.Speed.Tested)
	assert.True(t, few.Speed.Speedup.TooFew, "five pairs get no interval")
	assert.Equal(t, pairbench.NoSignal, many.Label, many.Why)
	assert.LessOrEqual(t, many.MinP.Speed, 0.05)
}

func TestBuildHolmAcrossIntents(t *testing.T) {
	// Eight pairs per intent, treatment faster in all: signed-rank p 2/2⁸.
	// With more than one intent the pooled speed test rejects at α/3 and
	// passes half its level on, so the intents' family (every intent's
	// speed and accuracy tests) is decided at α/2; adjusted p values are
	// reported on α's scale (multiplied by 2).
	for _, tc := range []struct {
		intents int
		want    pairbench.Label
		padj    float64
	}{
		{1, pairbench.Faster, 2.0 / 256},         // one intent: the whole α, p = 0.0078
		{3, pairbench.Faster, 3 * 2.0 / 256 * 2}, // Holm: 3 × 0.0078 = 0.0234 ≤ α/2
		{4, pairbench.Inconclusive, 1},           // 4 × 0.0078 > α/2: out of reach (Tarone leaves them all out)
	} {
		t.Run(fmt.Sprint(tc.intents), func(t *testing.T) {
			var rows []pairbench.Row
			var ids []string
			for k := range tc.intents {
				id := fmt.Sprintf("i%d", k)
				ids = append(ids, id)
				for i := range 8 {
					rows = append(rows, pairRows(id, i, ok(100+float64(i)), ok(40))...)
				}
			}
			rep := Build(planFor(ids...), rows)
			require.NotNil(t, rep.Headline)
			assert.Equal(t, pairbench.Faster, rep.Verdict, "the pooled test is faster however many intents: %s", rep.Headline.Why)
			for _, in := range rep.Intents {
				assert.Equal(t, tc.want, in.Label, in.Why)
				assert.InDelta(t, tc.padj, in.Speed.PAdj, 1e-12)
				if tc.want != pairbench.Faster {
					assert.False(t, in.Speed.Tested)
				}
				assert.InDelta(t, 2.0/256, in.Speed.P, 1e-12, "raw p is kept")
			}
		})
	}
}

func TestBuildAdopters(t *testing.T) {
	var rows []pairbench.Row
	for i := range 12 {
		tt := ok(40)
		tt.adopted = i%3 != 0
		if !tt.adopted {
			tt.wall = 100
		}
		rows = append(rows, pairRows("mixed-use", i, ok(90), tt)...)
	}
	in := Build(planFor("mixed-use"), rows).Intents[0]
	require.NotNil(t, in.Adopters)
	assert.False(t, in.Adopters.Randomized)
	assert.Equal(t, 8, in.Adopters.Pairs)
	assert.Equal(t, 8, in.Adopters.Faster)
	assert.Equal(t, 2.0/256, in.Adopters.P, "8 pairs, all faster")
	assert.Nil(t, in.Adopters.SpeedupAdj, "not in the family")
	assert.True(t, in.Speed.Randomized)
	assert.Equal(t, 8, in.Treatment.Adoption.X)
}

func TestBuildNoAdoption(t *testing.T) {
	var rows []pairbench.Row
	for i := range 10 {
		rows = append(rows, pairRows("unused", i, ok(90), trial{pairbench.Correct, 40, false})...)
	}
	// A domain whose adoption stage saw no tool use gets no pairs.
	for i := range 3 {
		r := row("stopped", i, "", pairbench.Treatment, 1, trial{pairbench.Correct, 40, false})
		r.Stage, r.Domain = pairbench.StageAdoption, "weather.example"
		rows = append(rows, r)
	}
	plan := planFor("unused", "stopped")
	plan.Intents[1].Domain = "weather.example"
	rep := Build(plan, rows)
	assert.Equal(t, pairbench.NoAdoption, rep.Intents[0].Label, rep.Intents[0].Why)
	assert.Equal(t, pairbench.NoAdoption, rep.Intents[1].Label, rep.Intents[1].Why)
	// The plan's adoption results override what rows say.
	plan.Adoption = []DomainAdoption{{Domain: "weather.example", Trials: 3, Adopted: 2}}
	rep = Build(plan, rows)
	assert.Equal(t, pairbench.Inconclusive, rep.Intents[1].Label, rep.Intents[1].Why)
}

func TestBuildToolsNativeAndToolless(t *testing.T) {
	rows := workedExample("books")
	rows[0].NativeTools = []string{"site_search"}
	rows[0].WebMCP = []pairbench.Invocation{{Tool: "site_search", Status: "ok"}}
	rows[1].WebMCP = []pairbench.Invocation{
		{Tool: "find_books", Status: "ok", Registered: true},
		{Tool: "find_books", Status: "error", Error: "timeout", Registered: true},
		{Tool: "find_books", Status: "error", Error: "timeout", Registered: true},
		{Tool: "find_books", Status: "error", Error: "no such author", Registered: true},
	}
	rows[3].Turns = 1 // pair 1 ran BA: its control, correct, no tool call
	rep := Build(planFor("books"), rows)
	in := rep.Intents[0]
	assert.Equal(t, []int{0}, in.Control.NativeStarts)
	assert.Equal(t, []string{"site_search"}, in.Control.NativeTools)
	assert.Equal(t, 1, in.Control.Toolless)
	assert.Equal(t, []ToolFailures{
		{Domain: "books.example", Tool: "find_books", Registered: true, Calls: 4, Failures: 3,
			Errors: []ErrorCount{{"timeout", 2}, {"no such author", 1}}},
		{Domain: "books.example", Tool: "site_search", Calls: 1},
	}, rep.Tools)
}

// TestBuildToolsThatDidNotRegister: a registered tool whose file failed in
// the browser is in the per-tool table with the trials it failed in and
// the browser's message, though the agent never called it.
func TestBuildToolsThatDidNotRegister(t *testing.T) {
	rows := workedExample("books")
	fail := pairbench.RegistrationFailure{Tool: "list_genre", File: "domains/books.example/tools/list_genre.js", Line: 3,
		URL: "http://books.example/", Error: "TypeError: x is undefined"}
	aborted := row("books", 10, pairbench.AB, pairbench.Treatment, 1, trial{outcome: pairbench.Aborted})
	aborted.Unregistered = []pairbench.RegistrationFailure{fail}
	rows = append(rows, aborted, aborted)
	rows[1].Unregistered = []pairbench.RegistrationFailure{{Tool: "list_genre", URL: "http://books.example/b", Error: "the browser cannot compile the file: SyntaxError"}}
	rep := Build(planFor("books"), rows)
	assert.Equal(t, []ToolFailures{{Domain: "books.example", Tool: "list_genre", Registered: true, NotRegistered: 3,
		Errors: []ErrorCount{
			{"did not register (domains/books.example/tools/list_genre.js:3): TypeError: x is undefined", 2},
			{"did not register: the browser cannot compile the file: SyntaxError", 1},
		}}}, rep.Tools)

	md := Markdown(rep, MarkdownOptions{})
	assert.Contains(t, md, "| `books.example` | `list_genre` | yes, but did not register in 3 trials | 0 | 0 | "+
		"`did not register (domains/books.example/tools/list_genre.js:3): TypeError: x is undefined` ×2;")
	var html strings.Builder
	require.NoError(t, WriteHTML(&html, rep, HTMLOptions{}))
	assert.Contains(t, html.String(), "yes, but did not register in 3 trial(s)")
}

// TestBuildCountsWebMCPImpl: each arm counts its trials by whose WebMCP
// their start page had; an intent and a run whose trials had both the
// browser's own and the polyfill are flagged in every rendering, and a run
// of one kind, or of rows from before the field, is not.
func TestBuildCountsWebMCPImpl(t *testing.T) {
	withImpl := func(intent string, impl func(i int) pairbench.WebMCPImpl) []pairbench.Row {
		rows := workedExample(intent)
		for i := range rows {
			rows[i].WebMCPImpl = impl(i)
		}
		return rows
	}
	polyfill := func(int) pairbench.WebMCPImpl { return pairbench.WebMCPPolyfill }
	// 20 rows, 10 pairs: the first three pairs' rows ran on native WebMCP.
	someNative := func(i int) pairbench.WebMCPImpl {
		if i < 6 {
			return pairbench.WebMCPNative
		}
		return pairbench.WebMCPPolyfill
	}
	rows := append(withImpl("books", polyfill), withImpl("mixed", someNative)...)
	rep := Build(planFor("books", "mixed"), rows)
	books, mixed := rep.Intents[0], rep.Intents[1]
	assert.Equal(t, WebMCPCount{Polyfill: 10}, books.Control.WebMCP)
	assert.Equal(t, WebMCPCount{Native: 3, Polyfill: 7}, mixed.Control.WebMCP)
	assert.Equal(t, WebMCPCount{Native: 3, Polyfill: 7}, mixed.Treatment.WebMCP)
	assert.Equal(t, WebMCPCount{Native: 6, Polyfill: 34}, rep.Run.WebMCP)
	assert.Equal(t, []string{"mixed"}, rep.Run.MixedIntents)

	md := Markdown(rep, MarkdownOptions{})
	assert.Contains(t, md, "| WebMCP of the start page | polyfill 10 | polyfill 10 |")
	assert.Contains(t, md, "| WebMCP of the start page | native 3 · polyfill 7 | native 3 · polyfill 7 |")
	flag := "> [!WARNING]\n> **Mixed WebMCP.** 6 trials ran on the browser's own WebMCP and 34 on pairbench's polyfill (both within intent mixed)."
	assert.Contains(t, md, flag, "the comment flags the mixed run")
	assert.Contains(t, CheckSummary(rep, MarkdownOptions{}), flag, "so does the check run")
	var html strings.Builder
	require.NoError(t, WriteHTML(&html, rep, HTMLOptions{}))
	assert.Contains(t, html.String(), `<p class="warning"><strong>Mixed WebMCP.</strong> 6 trials ran on the browser&#39;s own WebMCP`)
	assert.Contains(t, html.String(), "<dt>Mixed WebMCP</dt><dd>6 trials on the browser&#39;s own WebMCP, 14 on the polyfill")
	assert.Contains(t, html.String(), "<dt>WebMCP</dt><dd>mixed: trials of complete pairs, both arms, by whose WebMCP the start page had: native 6 · polyfill 34; intents with both: mixed</dd>")

	one := Build(planFor("books"), withImpl("books", polyfill))
	assert.False(t, one.Run.WebMCP.Mixed())
	assert.NotContains(t, Markdown(one, MarkdownOptions{}), "Mixed WebMCP")
	assert.Contains(t, Markdown(one, MarkdownOptions{}), "- **WebMCP:** trials of complete pairs, both arms, by whose WebMCP the start page had: polyfill 20\n")

	old := Build(planFor("books"), workedExample("books"))
	assert.Zero(t, old.Run.WebMCP)
	assert.NotContains(t, Markdown(old, MarkdownOptions{}), "WebMCP of the start page", "rows from before the field: no row")
	b, err := json.Marshal(old)
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"webmcp"`, "nor anything in report.json")
}

// TestBuildNamesPairsWithBrowserRefusals: a trial whose browser had a
// request refused is named with its pair and arm, and the report shows it.
func TestBuildNamesPairsWithBrowserRefusals(t *testing.T) {
	rows := workedExample("books")
	rows[1].BrowserRefusals = 3 // pair 0 ran AB: its treatment
	rows[3].BrowserRefusals = 1 // pair 1 ran BA: its control
	rep := Build(planFor("books"), rows)
	in := rep.Intents[0]
	assert.Equal(t, []int{1}, in.Control.BrowserRefused)
	assert.Equal(t, []int{0}, in.Treatment.BrowserRefused)
	assert.Contains(t, Markdown(rep, MarkdownOptions{}), "| browser requests refused (browser-refusals.jsonl) | pairs 1 | pairs 0 |")

	clean := Build(planFor("books"), workedExample("books"))
	assert.Empty(t, clean.Intents[0].Control.BrowserRefused)
	assert.NotContains(t, Markdown(clean, MarkdownOptions{}), "browser requests refused")
}

func TestBuildRunChecks(t *testing.T) {
	rows := workedExample("books")
	rows[0].StartDelayMS = 12_500                         // pair 0 control; treatment launched at 0
	rows[2].CapsHit = []pairbench.Cap{pairbench.CapTurns} // pair 1 ran BA: treatment
	rows = append(rows, row("books", 10, pairbench.AB, pairbench.Control, 1, trial{outcome: pairbench.Aborted}))
	for i := range 8 {
		rows = append(rows, pairRows("placebo", i, ok(60), ok(61))...)
	}
	plan := planFor("books", "placebo")
	plan.Intents[1].Placebo = true
	plan.Intents[1].Class = pairbench.AnswerShapeOnly
	rep := Build(plan, rows)
	rc := rep.Run
	assert.Equal(t, 20+1+16, rc.Attempts)
	assert.Equal(t, 1, rc.StartDelay.Apart)
	assert.Equal(t, []PairRef{{"books", 0}}, rc.StartDelay.Examples)
	assert.Equal(t, 18, rc.StartDelay.Checked)
	assert.Equal(t, []CapCount{{pairbench.CapTime, 0, 0}, {pairbench.CapTurns, 0, 1}, {pairbench.CapSpend, 0, 0}}, rc.Caps)
	require.NotNil(t, rc.Placebo)
	assert.Equal(t, []string{"placebo"}, rc.Placebo.Intents)
	assert.Equal(t, Table{BothCorrect: 8}, rc.Placebo.Table)
	assert.Equal(t, 8, rc.Placebo.Speed.Slower)
	// The placebo intent is tested alone at α (signed-rank p 0.0078), in no
	// family; the one benched intent gets the whole α (p 0.0156).
	assert.Equal(t, pairbench.Faster, rep.Intents[0].Label)
	assert.Equal(t, pairbench.Slower, rep.Intents[1].Label)
	assert.Equal(t, []string{"placebo"}, rc.ShapeOnly)
	assert.Equal(t, []LabelCount{{pairbench.Slower, 1}, {pairbench.Faster, 1}}, rc.Labels)
	assert.Equal(t, pairbench.Faster, rep.Verdict, "the placebo intent leaves the headline")
	require.NotNil(t, rep.Headline)
	assert.Equal(t, 1, rep.Headline.Intents)
	assert.Contains(t, rep.Headline.Suspect, "harness", "the placebo's effect makes the harness suspect")
	assert.Equal(t, 2, rc.Noise.Observed)
	assert.InDelta(t, rep.Intents[0].NoiseProb+rep.Intents[1].NoiseProb, rc.Noise.Expected, 1e-12)
	null := stats.NullFor(7)
	assert.InDelta(t, 1-(1-stats.RejectRate(null, null.Critical(0.05)))*(1-stats.RejectProb(2, 0.05)), rep.Intents[0].NoiseProb, 1e-12)
	// Order check: pairs 0,2,4,6,8 (+ placebo evens) ran AB.
	require.Len(t, rc.Order, 2)
	assert.Equal(t, pairbench.AB, rc.Order[0].Order)
	assert.Equal(t, 9, rc.Order[0].Pairs)
	assert.Equal(t, 9, rc.Order[1].Pairs)
	assert.InDelta(t, 1.0/9, *rc.Order[0].Delta, 1e-12, "pair 8 is treatment-only correct")
	require.NotNil(t, rc.MedianSpeedup)
	assert.InDelta(t, (rep.Intents[0].Speed.Speedup.Est+60.0/61)/2, *rc.MedianSpeedup, 1e-12)
	assert.InDelta(t, (1510.0+8*60)/60, rc.Control.AgentMinutes, 1e-9)
	assert.Equal(t, 18*4, rc.Treatment.Turns)
}

func TestReportJSONRoundTrip(t *testing.T) {
	rows := workedExample("books")[:6] // three pairs: the exact interval is unbounded
	rep := Build(planFor("books"), rows)
	require.True(t, math.IsInf(rep.Intents[0].Speed.Speedup.Hi, 1))
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"v":2`)
	var back Report
	require.NoError(t, json.Unmarshal(b, &back))
	assert.True(t, math.IsInf(back.Intents[0].Speed.Speedup.Hi, 1), "null reads back as unbounded")
	assert.Equal(t, rep.Intents[0].Speed.Speedup, back.Intents[0].Speed.Speedup)
	assert.Equal(t, rep.Intents[0].Label, back.Intents[0].Label)
	assert.Equal(t, rep.Intents[0].Accuracy.P, back.Intents[0].Accuracy.P)
	assert.True(t, math.IsNaN(back.Intents[0].Accuracy.Share.Est), "no discordant pair: null reads back as NaN")
	assert.Equal(t, rep.Intents[0].Accuracy.Family, back.Intents[0].Accuracy.Family)
	empty, err := json.Marshal(stats.Interval{Est: math.NaN(), Lo: 0, Hi: math.Inf(1)})
	require.NoError(t, err)
	assert.JSONEq(t, `{"est":null,"lo":0,"hi":null}`, string(empty))
}

func TestBuildIsDeterministic(t *testing.T) {
	specs := manySpecs(4, 300)
	rows := generate(rand.New(rand.NewPCG(5, 5)), specs)
	a, b := Build(genPlan(specs, 9), rows), Build(genPlan(specs, 9), rows)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	assert.JSONEq(t, string(ja), string(jb))
	// Reordering the plan does not change an intent's statistics.
	p := genPlan(specs, 9)
	p.Intents[0], p.Intents[3] = p.Intents[3], p.Intents[0]
	c := Build(p, rows)
	assert.Equal(t, a.Intents[0].Speed, c.Intents[3].Speed)
}

// round4 rounds f to four decimals.
func round4(f float64) float64 { return math.Round(f*1e4) / 1e4 }
