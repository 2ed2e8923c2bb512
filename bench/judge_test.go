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
	cfg := config(t, dir)
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
