// Command gen writes examples/runs/demo: a synthetic run of nine intents on
// the example sites (books.example, weather.example) whose rows are made so
// that `pairbench report examples/runs/demo` shows every label once, from
// "less accurate" to "better", with aborted and rerun pairs, every outcome,
// cap hits, tool failures, an agreement check that turns "faster" into
// "mixed", a placebo intent and an adoption stage.
//
// No agent produced these rows: they are generated from a fixed seed, and
// run.json names the model "synthetic/examples-runs-gen", marked scripted
// (not an LLM), so the report says so. Regenerate the run and its reports
// after changing this program or the report:
//
//	go run ./examples/runs/gen -out examples/runs/demo
//	go run ./cmd/pairbench report examples/runs/demo
//
// The same program always writes the same bytes; a test checks the
// committed files against it.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench"
)

func main() {
	out := flag.String("out", "examples/runs/demo", "run directory to write run.json and rows.jsonl to")
	big := flag.Int("big", 0, "instead of the demo, write a synthetic run of this many intents (for the report benchmark, docs/cli.md)")
	pairs := flag.Int("pairs", 500, "with -big, pairs per intent (two rows each)")
	flag.Parse()
	if *big > 0 {
		if err := writeBig(*out, *big, *pairs); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		return
	}
	if err := write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// write writes the demo run's run.json and rows.jsonl into dir.
func write(dir string) error {
	plan, rows := demo()
	run := rundir.RunDir{Path: dir}
	if err := run.WritePlan(plan); err != nil {
		return err
	}
	var lines []byte
	var err error
	for _, r := range rows {
		if lines, err = pairbench.AppendRow(lines, r); err != nil {
			return err
		}
	}
	return run.WriteFile(rundir.RowsFile, lines)
}

const (
	runID = "demo"
	seed  = 20261129
)

// profile is how treatment's wall time compares with control's in a
// both-correct pair.
type profile int

const (
	// even: treatment faster and slower in turn, by a little.
	even profile = iota
	// fast: treatment about 2.5 times faster in every pair.
	fast
	// slow: treatment about 2 times slower in every pair.
	slow
)

// spec describes one intent of the demo and the rows it gets.
type spec struct {
	id, domain string
	class      pairbench.AnswerClass
	agreement  *report.Agreement
	placebo    bool
	tools      []string
	// The paired table: how many complete pairs fall in each cell.
	both, treatmentOnly, controlOnly, neither int
	// lost pairs abort in treatment on both attempts.
	lost  int
	speed profile
	// adopt is false when treatment never invokes a registered tool.
	adopt bool
	// missCheapest both-correct pairs get a treatment answer that is
	// correct by the rules but dearer than control's.
	missCheapest int
	// good and bad answers.
	good, dear, bad map[string]any
}

var booksTools = []string{"find_books", "list_genre"}

func specs() []spec {
	cheapestByAuthor := map[string]any{"title": "Paper Boats", "price": "$7.49"}
	return []spec{
		{
			id: "books-newest-by-author", domain: "books.example", class: pairbench.AnswerPinned, tools: booksTools,
			both: 5, controlOnly: 13, neither: 2, speed: even, adopt: true,
			good: map[string]any{"title": "Engines of Mercy", "year": 2021},
			bad:  map[string]any{"title": "Iron Psalms", "year": 2009},
		},
		{
			id: "books-price-of-title", domain: "books.example", class: pairbench.AnswerPinned, tools: booksTools,
			both: 19, neither: 1, speed: slow, adopt: true,
			good: map[string]any{"title": "Dust Choir", "price": "$6.80"},
			bad:  map[string]any{"title": "Dust Choir", "price": "$8.60"},
		},
		{
			id: "books-cheapest-poetry", domain: "books.example", class: pairbench.AnswerAgreement, tools: booksTools,
			agreement: &report.Agreement{Kind: pairbench.AgreeCheapest, Field: "price", Tolerance: 0.01},
			both:      20, speed: fast, adopt: true, missCheapest: 4,
			good: map[string]any{"title": "Dust Choir", "price": "$6.80"},
			dear: map[string]any{"title": "Iron Psalms", "price": "$7.20"},
			bad:  map[string]any{"title": "Dust Choir"},
		},
		{
			id: "weather-coldest-city", domain: "weather.example", class: pairbench.AnswerPinned, tools: []string{"list_cities"},
			both: 16, treatmentOnly: 1, controlOnly: 1, neither: 2, speed: even, adopt: false,
			good: map[string]any{"city": "Tromsø", "high_c": -3},
			bad:  map[string]any{"city": "Oslo", "high_c": 4},
		},
		{
			id: "weather-high-oslo", domain: "weather.example", class: pairbench.AnswerPinned, tools: []string{"list_cities"}, placebo: true,
			both: 18, treatmentOnly: 1, controlOnly: 1, speed: even, adopt: true,
			good: map[string]any{"city": "Oslo", "high_c": 4},
			bad:  map[string]any{"city": "Oslo", "high_c": 9},
		},
		{
			id: "books-author-of-title", domain: "books.example", class: pairbench.AnswerShapeOnly, tools: booksTools,
			both: 5, lost: 3, speed: fast, adopt: true,
			good: map[string]any{"author": "Ada Quill"},
			bad:  map[string]any{"author": ""},
		},
		{
			id: "books-cheapest-by-author", domain: "books.example", class: pairbench.AnswerPinned, tools: booksTools,
			both: 20, speed: fast, adopt: true,
			good: cheapestByAuthor,
			bad:  map[string]any{"title": "Salt Lanterns", "price": "$9.99"},
		},
		{
			id: "books-poetry-titles", domain: "books.example", class: pairbench.AnswerPinned, tools: booksTools,
			both: 4, treatmentOnly: 14, neither: 2, speed: even, adopt: true,
			good: map[string]any{"titles": []any{"Dust Choir", "Iron Psalms", "Low Country Hymns"}},
			bad:  map[string]any{"titles": []any{"Dust Choir", "Iron Psalms"}},
		},
		{
			id: "books-count-by-author", domain: "books.example", class: pairbench.AnswerPinned, tools: booksTools,
			both: 12, treatmentOnly: 12, speed: fast, adopt: true,
			good: map[string]any{"count": 7},
			bad:  map[string]any{"count": 5},
		},
	}
}

// cell is where a complete pair falls in the paired table.
type cell int

const (
	cellBoth cell = iota
	cellTreatmentOnly
	cellControlOnly
	cellNeither
	cellLost
)

func demo() (*rundir.Plan, []pairbench.Row) {
	rng := rand.New(rand.NewPCG(seed, 1))
	start := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)
	plan := &rundir.Plan{
		V: rundir.PlanVersion, RunID: runID, CreatedAt: start,
		Versions: rundir.Versions{Pairbench: "examples-runs-gen", Agent: "1.6.0", Node: "22.23.5", Chromium: "156", PlaywrightMCP: "0.0.83"},
		Model:    rundir.Model{Provider: "synthetic", ID: "examples-runs-gen", Scripted: true},
		Caps:     rundir.PlanCaps{TimeS: 300, Turns: 40, SpendUSD: 0.5},
		Allowlist: []string{
			"mcp__browser__browser_click", "mcp__browser__browser_navigate", "mcp__browser__browser_snapshot",
			"mcp__browser__browser_type", "mcp__pairbench__webmcp",
		},
		Seed: seed, Alpha: 0.05,
	}

	g := &gen{rng: rng, clock: start, plan: plan}
	g.adoptionStage("books.example", "books-cheapest-by-author", map[string]any{"title": "Paper Boats", "price": "$7.49"}, []bool{true, true, true})
	g.adoptionStage("weather.example", "weather-high-oslo", map[string]any{"city": "Oslo", "high_c": 4}, []bool{false, true, false})
	for _, s := range specs() {
		g.intent(s)
	}
	return plan, g.rows
}

// gen accumulates the demo's rows.
type gen struct {
	rng   *rand.Rand
	clock time.Time
	plan  *rundir.Plan
	rows  []pairbench.Row
}

// adoptionStage records a domain's treatment-only adoption trials, all
// correct, adopting the tools as adopted says.
func (g *gen) adoptionStage(domain, intent string, answer map[string]any, adopted []bool) {
	for i, a := range adopted {
		r := g.row(intent, domain, pairbench.StageAdoption, i, "", pairbench.Treatment, 1)
		g.finish(&r, pairbench.Correct, 30+10*g.rng.Float64(), a, answer)
		g.rows = append(g.rows, r)
	}
}

func (g *gen) intent(s spec) {
	cells := make([]cell, 0)
	for c, n := range []int{s.both, s.treatmentOnly, s.controlOnly, s.neither, s.lost} {
		for range n {
			cells = append(cells, cell(c))
		}
	}
	g.rng.Shuffle(len(cells), func(i, j int) { cells[i], cells[j] = cells[j], cells[i] })
	orders := rundir.Orders(len(cells), g.rng)

	pi := rundir.PlannedIntent{
		ID: s.id, Domain: s.domain, Class: s.class, Agreement: s.agreement, Placebo: s.placebo, Tools: s.tools,
	}
	both, dear := 0, 0
	for pair, c := range cells {
		pi.Pairs = append(pi.Pairs, rundir.PlannedPair{Pair: pair, Order: orders[pair]})
		if c == cellLost {
			// Treatment's setup fails, the pair reruns whole, and fails again.
			for attempt := 1; attempt <= 2; attempt++ {
				g.abortedPair(s, pair, orders[pair], attempt)
			}
			continue
		}
		attempt := 1
		if s.speed == fast && pair == 2 {
			// One rerun: the first attempt's first trial never got a page.
			g.abortedPair(s, pair, orders[pair], attempt)
			attempt++
		}
		ctlOK := c == cellBoth || c == cellControlOnly
		trtOK := c == cellBoth || c == cellTreatmentOnly
		ctlTime := 40 + 40*g.rng.Float64()
		trtTime := ctlTime * (0.8 + 0.4*g.rng.Float64())
		if c == cellBoth {
			trtTime = ctlTime / g.ratio(s.speed, both)
		}
		trtAnswer := s.good
		if c == cellBoth && dear < s.missCheapest && both%3 == 1 {
			trtAnswer, dear = s.dear, dear+1
		}
		if c == cellBoth {
			both++
		}
		var pairRows [2]pairbench.Row
		for k, arm := range orders[pair].Arms() {
			r := g.row(s.id, s.domain, pairbench.StagePair, pair, orders[pair], arm, attempt)
			ok, wall, answer := ctlOK, ctlTime, s.good
			if arm == pairbench.Treatment {
				ok, wall, answer = trtOK, trtTime, trtAnswer
			}
			outcome := pairbench.Correct
			if !ok {
				outcome = []pairbench.Outcome{pairbench.Wrong, pairbench.Wrong, pairbench.Malformed, pairbench.Timeout, pairbench.Crashed}[g.rng.IntN(5)]
				answer = s.bad
			}
			g.finish(&r, outcome, wall, s.adopt && arm == pairbench.Treatment, answer)
			if k == 1 {
				r.StartDelayMS = pairRows[0].StartDelayMS + g.delayGap(s.id, pair)
			}
			if s.id == "weather-high-oslo" && pair == 3 {
				// The site briefly shipped a WebMCP tool of its own.
				r.NativeTools = []string{"weather_widget"}
			}
			pairRows[k] = r
		}
		g.rows = append(g.rows, pairRows[0], pairRows[1])
	}
	g.plan.Intents = append(g.plan.Intents, pi)
}

// ratio is control's time over treatment's in the i-th both-correct pair.
func (g *gen) ratio(p profile, i int) float64 {
	jitter := math.Exp(0.15 * g.rng.NormFloat64())
	switch p {
	case fast:
		return 2.5 * jitter
	case slow:
		return 0.5 * jitter
	}
	if i%2 == 0 {
		return 1.15 + 0.1*g.rng.Float64()
	}
	return 1 / (1.15 + 0.1*g.rng.Float64())
}

// delayGap is how much later the second agent of a pair launched: under
// 50 ms, except in two pairs that the start-delay check should name.
func (g *gen) delayGap(intent string, pair int) int64 {
	if (intent == "books-price-of-title" && pair == 4) || (intent == "weather-high-oslo" && pair == 11) {
		return 1400
	}
	return int64(g.rng.IntN(50))
}

// abortedPair records one attempt of a pair whose first trial aborted in
// setup, so its second trial never ran.
func (g *gen) abortedPair(s spec, pair int, order pairbench.Order, attempt int) {
	arm := order.Arms()[0]
	r := g.row(s.id, s.domain, pairbench.StagePair, pair, order, arm, attempt)
	r.Outcome = pairbench.Aborted
	r.Reason = fmt.Sprintf("setup: start page http://%s/ did not load in 3 fresh browsers", s.domain)
	r.StartDelayMS = 0
	g.rows = append(g.rows, r)
}

// row starts a row with its identity filled in.
func (g *gen) row(intent, domain string, stage pairbench.Stage, pair int, order pairbench.Order, arm pairbench.Arm, attempt int) pairbench.Row {
	dir := rundir.TrialDir(rundir.Job{Intent: intent, Stage: stage, Pair: pair, Attempt: attempt}, arm)
	g.clock = g.clock.Add(time.Duration(20+g.rng.IntN(70)) * time.Second)
	return pairbench.Row{
		V: pairbench.RowVersion, RunID: runID, Intent: intent, Domain: domain, Stage: stage,
		Pair: pair, Order: order, Arm: arm, Attempt: attempt, TrialDir: dir,
		StartDelayMS: 10000 + int64(g.rng.IntN(40)),
		StartedAt:    g.clock.Format(time.RFC3339),
	}
}

// finish fills in what the trial did.
func (g *gen) finish(r *pairbench.Row, outcome pairbench.Outcome, wall float64, adopted bool, answer map[string]any) {
	r.Outcome = outcome
	r.WallSeconds = math.Round(wall*100) / 100
	r.Turns = 3 + int(wall/6) + g.rng.IntN(3)
	r.ToolsDeclared = g.plan.Allowlist
	if answer != nil {
		b, _ := json.Marshal(answer)
		r.Answer = pairbench.Answer{Raw: "Here is what I found.\n\n```json\n" + string(b) + "\n```", Extracted: answer}
	}
	switch outcome {
	case pairbench.Wrong:
		r.Reason = "a rule failed on the answer"
	case pairbench.Malformed:
		r.Reason = "no answer could be extracted"
		r.Answer = pairbench.Answer{Raw: "I looked through the pages but could not settle on an answer."}
	case pairbench.Timeout:
		r.Reason = "time cap"
		r.CapsHit = []pairbench.Cap{pairbench.CapTime}
		r.WallSeconds = g.plan.Caps.TimeS
		r.Turns = 38
		r.Answer = pairbench.Answer{}
	case pairbench.Crashed:
		r.Reason = "the agent ended on an error"
		r.Error = "model stream ended early: <html><body>502 Bad Gateway</body></html>"
		r.Answer = pairbench.Answer{}
	}
	if adopted {
		r.Adopted = true
		tool, failure := "find_books", `{"status":"error","message":"author is required"}`
		if r.Domain == "weather.example" {
			tool, failure = "list_cities", "TypeError: Cannot read properties of null (reading 'querySelectorAll')"
		}
		r.WebMCP = []pairbench.Invocation{{Tool: tool, Status: "ok", MS: int64(80 + g.rng.IntN(400)), Registered: true}}
		if g.rng.IntN(12) == 0 {
			r.WebMCP = append([]pairbench.Invocation{{Tool: tool, Status: "error", Error: failure, MS: 12, Registered: true}}, r.WebMCP...)
		}
	}
	r.InputTokens = int64(r.Turns) * int64(1800+g.rng.IntN(400))
	r.OutputTokens = int64(r.Turns) * int64(60+g.rng.IntN(40))
	r.CostUSD = math.Round((float64(r.InputTokens)*3+float64(r.OutputTokens)*15)/1e6*1e6) / 1e6
}

// writeBig writes a synthetic run of n intents of pairs pairs each into
// dir: 1,000 intents of 500 pairs are 1,000,000 rows. The rows are the
// size of those a real trial writes (about 1.1 kB, as the rows of a pi
// bench of the example registry are): the fifteen tools the agent
// declares, unrounded wall times, the agent's answer with its JSON
// pretty-printed; about 1.1 GB for a million rows. The same arguments
// always write the same bytes. The rows are written intent by intent, so
// memory stays small whatever the size.
func writeBig(dir string, n, pairs int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	run := rundir.RunDir{Path: dir}
	f, err := os.Create(run.File(rundir.RowsFile))
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)

	rng := rand.New(rand.NewPCG(seed, 2))
	start := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)
	plan, _ := demo()
	plan.RunID, plan.Intents = "big", nil
	g := &gen{rng: rng, clock: start, plan: plan}
	good := map[string]any{"title": "Paper Boats", "price": "$7.49"}
	bad := map[string]any{"title": "Salt Lanterns", "price": "$9.99"}
	var line []byte
	for i := range n {
		// Accuracy and speed vary from intent to intent: most intents show
		// little, some a clear difference either way.
		both := pairs * (50 + rng.IntN(40)) / 100
		rest := pairs - both
		tOnly := rest * rng.IntN(60) / 100
		cOnly := (rest - tOnly) * rng.IntN(60) / 100
		g.intent(spec{
			id: fmt.Sprintf("intent-%04d", i), domain: fmt.Sprintf("site-%02d.example", i%40), class: pairbench.AnswerPinned,
			tools: booksTools, both: both, treatmentOnly: tOnly, controlOnly: cOnly, neither: rest - tOnly - cOnly,
			speed: profile(rng.IntN(3)), adopt: true, good: good, bad: bad,
		})
		for _, r := range g.rows {
			r.RunID = plan.RunID
			trialLike(&r, rng)
			if line, err = pairbench.AppendRow(line[:0], r); err != nil {
				return err
			}
			if _, err := w.Write(line); err != nil {
				return err
			}
		}
		g.rows = g.rows[:0]
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return run.WritePlan(plan)
}

// declared are the tools pi declares to the model in a trial: Playwright
// MCP's browser tools and pairbench's webmcp tool, in pi's order.
var declared = []string{
	"mcp__browser__browser_handle_dialog", "mcp__browser__browser_find", "mcp__browser__browser_fill_form",
	"mcp__browser__browser_press_key", "mcp__browser__browser_type", "mcp__browser__browser_navigate",
	"mcp__browser__browser_navigate_back", "mcp__browser__browser_take_screenshot", "mcp__browser__browser_snapshot",
	"mcp__browser__browser_click", "mcp__browser__browser_hover", "mcp__browser__browser_select_option",
	"mcp__browser__browser_tabs", "mcp__browser__browser_wait_for", "mcp__pairbench__webmcp",
}

// trialLike makes a demo row look like one a real trial writes: the tools
// the agent declared, a wall time measured to the nanosecond, and the
// answer as an agent writes it.
func trialLike(r *pairbench.Row, rng *rand.Rand) {
	if r.ToolsDeclared != nil {
		r.ToolsDeclared = declared
	}
	if r.WallSeconds > 0 {
		r.WallSeconds += float64(rng.IntN(1e7)) / 1e9
	}
	if r.Answer.Extracted != nil {
		b, _ := json.MarshalIndent(r.Answer.Extracted, "", "  ")
		r.Answer.Raw = "I found the answer using the page's find_books tool.\n\n```json\n" + string(b) + "\n```"
	}
}
