package viewer_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"path"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/rundir"
)

// hostile is text a hostile page could put in a transcript, an answer, a
// tool's name or result: markup that would run script, restyle the page,
// leave a <pre> or an attribute, or navigate, were it not escaped.
const hostile = `</pre></li></ol><script>document.title="pwned"</script>` +
	`<img src=x onerror="document.title='pwned'"><style>body{display:none}</style>` +
	`"><a href="javascript:document.title='pwned'">x</a><meta http-equiv="refresh" content="0;url=http://127.0.0.1:9/">` +
	"]]><svg onload=\"document.title='pwned'\"></svg>{{.Root}}"

// fakeRun describes a synthetic run for the site's tests.
type fakeRun struct {
	intents, pairs int
	// hostile puts hostile text in every place a trial's content reaches
	// the pages.
	hostile bool
	// trials writes trial directories (transcripts, timelines,
	// screenshots).
	trials bool
	// mixed runs the first intent's trials on the browser's own WebMCP,
	// the others' on the polyfill (as all do without it).
	mixed bool
	// against benches the tools against their version at main
	// (--against main).
	against bool
	// judged makes every intent open-ended: its trials judged on two
	// criteria, twice (judged.go's judgement).
	judged bool
}

// write writes the run's plan, rows and trial directories into dir and
// reports it as pairbench report does; it returns the run.
func (f fakeRun) write(t testing.TB, dir string) rundir.RunDir {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(f.intents), uint64(f.pairs)))
	run := rundir.RunDir{Path: dir}
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	plan := &rundir.Plan{
		V: rundir.PlanVersion, RunID: "viewer-test", CreatedAt: start,
		Versions: rundir.Versions{Pairbench: "test", AgentName: "pi", Agent: "1.6.0"},
		Model:    rundir.Model{Provider: "pairbench", ID: "pairbench-scripted", Scripted: true},
		Caps:     rundir.PlanCaps{TimeS: 120, Turns: 30},
		Seed:     7, Alpha: 0.05,
	}
	if f.against {
		plan.Arms = &rundir.PlanArms{Control: rundir.ArmSpec{Tools: rundir.RevTools, Rev: "main", Commit: "1a2b3c4d5e6f"},
			Treatment: rundir.ArmSpec{Tools: rundir.RegistryTools}}
	}
	var rows []byte
	shot := screenshot(t)
	for i := range f.intents {
		id := fmt.Sprintf("books-intent-%03d-with-a-long-descriptive-name", i)
		in := rundir.PlannedIntent{ID: id, Domain: "books.example", Class: pairbench.AnswerPinned, Tools: []string{"find_books"}}
		if f.judged {
			in.Class, in.Criteria = pairbench.AnswerJudged, judgedCriteria
		}
		// Each intent leans its own way, so the run shows every label.
		treatBetter := rng.Float64()
		speed := 0.3 + 2.5*rng.Float64()
		for p := range f.pairs {
			order := pairbench.AB
			if p%2 == 1 {
				order = pairbench.BA
			}
			in.Pairs = append(in.Pairs, rundir.PlannedPair{Pair: p, Order: order})
			ctlWall := 20 + 40*rng.Float64()
			walls := map[pairbench.Arm]float64{pairbench.Control: ctlWall, pairbench.Treatment: ctlWall / speed * (0.8 + 0.4*rng.Float64())}
			correct := map[pairbench.Arm]bool{pairbench.Control: rng.Float64() < 0.7, pairbench.Treatment: rng.Float64() < treatBetter}
			if i%3 == 0 {
				correct[pairbench.Treatment] = correct[pairbench.Control] // no pair where the arms disagree
			}
			if i%5 == 1 {
				correct[pairbench.Control], correct[pairbench.Treatment] = true, true // no wrong trial
			}
			for _, arm := range []pairbench.Arm{pairbench.Control, pairbench.Treatment} {
				job := rundir.Job{Intent: id, Stage: pairbench.StagePair, Pair: p, Order: order, Attempt: 1}
				r := pairbench.Row{
					V: pairbench.RowVersion, RunID: plan.RunID, Intent: id, Domain: in.Domain, Stage: pairbench.StagePair,
					Pair: p, Order: order, Arm: arm, Attempt: 1, Outcome: pairbench.Correct,
					WallSeconds: walls[arm], StartDelayMS: 12, Turns: 3 + rng.IntN(9), InputTokens: 12000, OutputTokens: 90, CostUSD: 0.004,
					Answer:     pairbench.Answer{Raw: "I found it.\n```json\n{\"title\": \"Paper Boats\"}\n```", Extracted: map[string]any{"title": "Paper Boats"}},
					WebMCPImpl: pairbench.WebMCPPolyfill,
				}
				if f.mixed && i == 0 {
					r.WebMCPImpl = pairbench.WebMCPNative
				}
				if !correct[arm] {
					r.Outcome, r.Reason = pairbench.Wrong, `rule "title" failed: want "Paper Boats", got "Salt Lanterns"`
					r.Answer.Extracted = map[string]any{"title": "Salt Lanterns"}
				}
				if arm == pairbench.Treatment {
					r.Adopted = true
					r.WebMCP = []pairbench.Invocation{{Tool: "find_books", Status: "ok", MS: 420, Registered: true}}
				}
				if f.judged && r.Outcome == pairbench.Correct {
					r.Judge = judgement(arm, f.hostile)
				}
				if f.hostile {
					r.Answer = pairbench.Answer{Raw: hostile, Extracted: map[string]any{"title": hostile}}
					r.Reason, r.Error = hostile, hostile
					r.WebMCP = append(r.WebMCP, pairbench.Invocation{Tool: hostile, Status: "error", Error: hostile, MS: 3})
					r.Unregistered = []pairbench.RegistrationFailure{{Tool: hostile, File: hostile, URL: hostile, Error: hostile}}
				}
				if f.trials {
					r.TrialDir = rundir.TrialDir(job, arm)
					writeTrial(t, run, r, shot, f.hostile)
				}
				var err error
				rows, err = pairbench.AppendRow(rows, r)
				require.NoError(t, err)
			}
		}
		plan.Intents = append(plan.Intents, in)
	}
	require.NoError(t, run.WritePlan(plan))
	require.NoError(t, run.WriteFile(rundir.RowsFile, rows))
	rep, err := bench.WriteReport(run, run, "https://ci.example/r/report.html")
	require.NoError(t, err)
	assert.Empty(t, rep.Warnings, "rows")
	return run
}

// writeTrial writes a trial directory for r like a pi trial's: a
// transcript of message_end records and its steps, its timeline, its
// WebMCP calls and the end-of-trial screenshot.
func writeTrial(t testing.TB, run rundir.RunDir, r pairbench.Row, shot []byte, hostile bool) {
	t.Helper()
	text := func(s string) []map[string]any { return []map[string]any{{"type": "text", "text": s}} }
	page := "### Page\n- Page URL: http://books.example/\n- Page Title: Books Example"
	tool := "mcp__browser__browser_snapshot"
	if hostile {
		page, tool = hostileText, hostileText
	}
	msgs := []map[string]any{
		{"role": "system", "content": "", "sections": map[string]any{"preamble": "system prompt"}},
		{"role": "user", "content": text("What is the cheapest book by Ada Quill?")},
		{"role": "assistant", "content": []map[string]any{{"type": "toolCall", "id": "c1", "name": "mcp__pairbench__webmcp", "arguments": map[string]any{"action": "list"}}}},
		{"role": "toolResult", "toolCallId": "c1", "toolName": "mcp__pairbench__webmcp", "content": text(`{"tools":[{"name":"find_books"}]}`)},
		{"role": "assistant", "content": []map[string]any{{"type": "toolCall", "id": "c2", "name": tool, "arguments": map[string]any{"note": page}}}},
		{"role": "toolResult", "toolCallId": "c2", "toolName": tool, "content": text(page), "isError": hostile},
		{"role": "assistant", "content": text(r.Answer.Raw)},
	}
	var transcript []byte
	var times []int64
	for i, m := range msgs {
		b, err := json.Marshal(map[string]any{"type": "message_end", "message": m})
		require.NoError(t, err)
		transcript = append(append(transcript, b...), '\n')
		times = append(times, int64(1300+900*i))
	}
	end := int64(r.WallSeconds * 1000)
	tl := rundir.Timeline{
		StartedAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC),
		Marks: []rundir.Mark{
			{Step: rundir.StepSetup}, {Step: rundir.StepBrowserOpening, AtMS: 1}, {Step: rundir.StepBrowserOpen, AtMS: 900},
			{Step: rundir.StepPageLoaded, AtMS: 1100}, {Step: rundir.StepSetupDone, AtMS: 1150}, {Step: rundir.StepAgentLaunched, AtMS: 1162},
			{Step: rundir.StepFirstTurn, AtMS: 1300}, {Step: rundir.StepAgentEnded, AtMS: end}, {Step: rundir.StepScreenshot, AtMS: end + 80},
			{Step: rundir.StepEnd, AtMS: end + 300},
		},
		Transcript: times,
	}
	if len(r.WebMCP) > 0 {
		tl.WebMCP = []int64{2400}
	}
	b, err := json.Marshal(tl)
	require.NoError(t, err)
	// The same turns as the adapter writes them to steps.jsonl.
	args, err := json.Marshal(map[string]any{"note": page})
	require.NoError(t, err)
	var steps bytes.Buffer
	for _, s := range []rundir.Step{
		{Kind: rundir.TaskStep, AtMS: times[1], Text: "What is the cheapest book by Ada Quill?"},
		{Kind: rundir.CallStep, AtMS: times[2], Turn: 1, Tool: "mcp__pairbench__webmcp", Args: []byte(`{"action":"list"}`)},
		{Kind: rundir.ResultStep, AtMS: times[3], Tool: "mcp__pairbench__webmcp", Text: `{"tools":[{"name":"find_books"}]}`},
		{Kind: rundir.CallStep, AtMS: times[4], Turn: 2, Tool: tool, Args: args},
		{Kind: rundir.ResultStep, AtMS: times[5], Tool: tool, Text: page, Error: hostile},
		{Kind: rundir.TextStep, AtMS: times[6], Turn: 3, Text: r.Answer.Raw},
	} {
		require.NoError(t, rundir.WriteStep(&steps, s))
	}
	dir := r.TrialDir
	for name, data := range map[string][]byte{
		rundir.TrialSteps:      steps.Bytes(),
		rundir.TrialTranscript: transcript, rundir.TrialTimeline: b, rundir.TrialScreenshot: shot,
		rundir.TrialSetup: []byte("{}\n"), rundir.TrialWebMCP: nil,
	} {
		require.NoError(t, run.WriteFile(path.Join(dir, name), data))
	}
}

// hostileText is hostile for the transcript: markup, and a line long
// enough to be trimmed.
var hostileText = hostile + string(bytes.Repeat([]byte("<b>long</b> "), 400))

// screenshot is a PNG of the screenshot size, a page-like picture.
func screenshot(t testing.TB) []byte {
	img := image.NewRGBA(image.Rect(0, 0, rundir.ScreenshotWidth, rundir.ScreenshotHeight))
	for y := range rundir.ScreenshotHeight {
		for x := range rundir.ScreenshotWidth {
			c := color.RGBA{255, 255, 255, 255}
			if y < 90 {
				c = color.RGBA{9, 105, 218, 255}
			} else if x > 200 && x < 1080 && (y/40)%3 == 0 && y > 150 {
				c = color.RGBA{208, 215, 222, 255}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}
