package bench_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
)

// editFile replaces old with new in the file (old must occur).
func editFile(t *testing.T, file, old, new string) {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(b), old)
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
}

// TestPageChecksGateTheGrade benches an intent whose hard check wants the
// search results the page route ends on: control, which searches, passes
// it and grades correct; treatment, whose agent answers from the tool on
// the start page, fails it and grades wrong however right its answer,
// with the check and what the page showed in the reason. Both trials keep
// the page they were checked on.
func TestPageChecksGateTheGrade(t *testing.T) {
	realstack.Need(t)
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("../examples/registry")))
	file := filepath.Join(dir, "bench/intents/books.example/books-cheapest-by-author.yaml")
	editFile(t, file, "class: pinned\n", "class: pinned\nchecks:\n  - selector: h1\n    text: \"books by {{author}}\"\n")
	cfg := benchConfig(t, dir)
	cfg.Intents, cfg.ExampleSites = []string{"books-cheapest-by-author"}, true

	var mu sync.Mutex
	var rows []pairbench.Row
	cfg.Hooks = bench.Hooks{Row: func(r pairbench.Row) { mu.Lock(); rows = append(rows, r); mu.Unlock() }}
	res, err := bench.Bench(t.Context(), cfg)
	require.NoError(t, err)
	plan, err := res.Dir.ReadPlan()
	require.NoError(t, err)
	final := scoredOnce(t, plan, rows)
	require.Len(t, final, 2)
	for _, r := range final {
		var page pairbench.PageState
		b, err := os.ReadFile(res.Dir.File(filepath.Join(r.TrialDir, runner.TrialPage)))
		require.NoError(t, err, "%s keeps its final page", r.Arm)
		require.NoError(t, json.Unmarshal(b, &page))
		require.Len(t, page.Elements, 1)
		switch r.Arm {
		case pairbench.Control:
			assert.Equal(t, pairbench.Correct, r.Outcome, r.Reason)
			assert.Equal(t, "Books by Ada Quill", page.Elements[0].Text)
		case pairbench.Treatment:
			assert.Equal(t, pairbench.Wrong, r.Outcome)
			assert.Equal(t, `page check h1 has text "books by Ada Quill" (`+file+`:20) failed: its text is "Books Example"`, r.Reason)
			assert.Equal(t, "Paper Boats", r.Answer.Extracted["title"], "the answer itself was right")
			assert.Equal(t, "http://books.example/", page.URL)
		}
	}
}

// giftIntent is an open-ended intent on the example bookshop. Its
// baseline reads only the first page of the poetry listing (sorted by
// title), which shows the cheapest poetry book but not the second
// cheapest; list_genre lists them all, cheapest first. So treatment's
// answer names both and control's the first alone: the scripted judge
// gives runner_up to treatment.
const giftIntent = `id: books-poetry-gift
domain: books.example
start_url: http://books.example/
prompt: >-
  Suggest the two cheapest poetry books in this bookshop as gifts.
  Answer with their titles.
entry_tool: list_genre
answer:
  type: object
  properties:
    picks: {type: array, items: {type: string}}
  required: [picks]
class: judged
pass_at: 0.8
criteria:
  - id: cheapest
    weight: 2
    description: Names the cheapest poetry book, "Dust Choir".
  - id: runner_up
    weight: 1
    description: Also names the second cheapest, "Paper Boats".
checks:
  - selector: main
baseline:
  tool_args: {genre: poetry}
  steps:
    - tool: browser_navigate
      args: {url: "http://books.example/"}
    - tool: browser_click
      args: {element: poetry}
  answer:
    picks: [Dust Choir, Paper Boats]
`

// TestJudgedIntentThroughTheRealStack benches an open-ended intent end to
// end (the example sites, Chromium, pi in its sandbox, the scripted model
// as the agents' model and as the judge): both arms pass the page check
// and are judged; treatment's answer scores full marks and is correct,
// control's misses the runner-up and falls under pass_at. The judge is
// frozen in run.json, and each trial keeps what the judge was asked.
func TestJudgedIntentThroughTheRealStack(t *testing.T) {
	realstack.Need(t)
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("../examples/registry")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bench/intents/books.example/books-poetry-gift.yaml"), []byte(giftIntent), 0o644))
	cfg := benchConfig(t, dir)
	cfg.Intents, cfg.ExampleSites = []string{"books-poetry-gift"}, true
	cfg.Judge.Twice = true

	var mu sync.Mutex
	var rows []pairbench.Row
	cfg.Hooks = bench.Hooks{Row: func(r pairbench.Row) { mu.Lock(); rows = append(rows, r); mu.Unlock() }}
	res, err := bench.Bench(t.Context(), cfg)
	require.NoError(t, err)
	plan, err := res.Dir.ReadPlan()
	require.NoError(t, err)
	require.NotNil(t, plan.Judge, "run.json freezes the judge")
	assert.Equal(t, "pairbench/pairbench-scripted", plan.Judge.Model.String())
	assert.Equal(t, runner.JudgePrompt, plan.Judge.Prompt)
	assert.Equal(t, runner.JudgePromptVersion, plan.Judge.PromptVersion)
	assert.Empty(t, plan.Judge.Model.BaseURL, "the scripted judge's port is not frozen")

	final := scoredOnce(t, plan, rows)
	require.Len(t, final, 2)
	for _, r := range final {
		require.NotNil(t, r.Judge, "%s was judged: %s %s", r.Arm, r.Outcome, r.Reason)
		assert.Positive(t, r.Judge.CostUSD, "the judging has its cost")
		assert.InDelta(t, r.CostUSD+r.Judge.CostUSD, r.SpendUSD(), 1e-12)
		cheapest, _ := r.Judge.Of("cheapest")
		runnerUp, _ := r.Judge.Of("runner_up")
		assert.Equal(t, 1.0, cheapest, "%s names the cheapest", r.Arm)
		switch r.Arm {
		case pairbench.Treatment:
			assert.Equal(t, pairbench.Correct, r.Outcome, r.Reason)
			assert.Equal(t, 1.0, runnerUp)
			assert.Equal(t, 1.0, r.Judge.Score)
		case pairbench.Control:
			assert.Equal(t, pairbench.Wrong, r.Outcome)
			assert.Equal(t, 0.0, runnerUp, "control read one page of the listing")
			assert.InDelta(t, 2.0/3, r.Judge.Score, 1e-9)
			assert.Equal(t, "judged 0.667, under pass_at 0.800", r.Reason)
		}
		assert.Contains(t, r.Judge.Reasoning, "runner_up: the answer holds")
		require.NotNil(t, r.Judge.Again, "judged twice")
		assert.Equal(t, r.Judge.Scores, r.Judge.Again.Scores, "the scripted judge agrees with itself")
		b, err := os.ReadFile(res.Dir.File(filepath.Join(r.TrialDir, rundir.TrialJudge)))
		require.NoError(t, err, "%s keeps what the judge was asked", r.Arm)
		assert.Contains(t, string(b), `"task"`)
		assert.NotContains(t, string(b), string(r.Arm), "the judge's question does not name the arm")
	}
	assert.True(t, plan.Judge.Twice)
	md, err := os.ReadFile(res.Dir.File(rundir.ReportMarkdown))
	require.NoError(t, err)
	for _, want := range []string{
		"runner\\_up (weight 1): control 0.00, treatment 1.00, higher in 0 and 1 pair, treatment won",
		"2 of 2 answers judged twice got the same verdict (100%)",
	} {
		assert.Contains(t, string(md), want, "the report (and the comment) shows the criteria and the judge's agreement")
	}
}
