package runner

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
)

func loadExamples(t *testing.T) *intents.Registry {
	t.Helper()
	reg, err := intents.Load("../examples/registry")
	require.NoError(t, err)
	return reg
}

func planOpts(sel ...string) PlanOptions {
	return PlanOptions{RunID: "r", Intents: sel, Pairs: 5, Seed: 42, Alpha: 0.05,
		Model: rundir.Model{Provider: "scripted", ID: "pairbench-scripted", Scripted: true},
		Caps:  rundir.PlanCaps{TimeS: 120, Turns: 20, SpendUSD: 1},
		Now:   time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
}

func TestNewPlanFreezesEverything(t *testing.T) {
	reg := loadExamples(t)
	p, skipped, err := NewPlan(reg, planOpts())
	require.NoError(t, err)
	assert.Empty(t, skipped)
	require.Len(t, p.Intents, len(reg.Intents))
	assert.Equal(t, Allowlist(), p.Allowlist)
	for _, in := range p.Intents {
		require.Len(t, in.Pairs, 5)
		ab := 0
		for _, pp := range in.Pairs {
			if pp.Order == pairbench.AB {
				ab++
			}
		}
		assert.Contains(t, []int{2, 3}, ab, "%s: balanced orders", in.ID)
		d := reg.Domain(in.Domain)
		var want []string
		for _, tool := range d.Registered() {
			want = append(want, tool.Name)
		}
		assert.Equal(t, want, in.Tools, "%s registers its domain's read-only tools", in.ID)
		assert.NotEmpty(t, in.Tools)
	}

	again, _, err := NewPlan(reg, planOpts())
	require.NoError(t, err)
	assert.Empty(t, p.Changes(again), "the same options plan the same run")
	other := planOpts()
	other.Seed = 43
	shuffled, _, err := NewPlan(reg, other)
	require.NoError(t, err)
	assert.NotEqual(t, p.Intents, shuffled.Intents, "another seed draws other orders")
	assert.Equal(t, []string{"seed: 42 → 43"}, p.Changes(shuffled), "a seed given again must be the plan's (a resume takes the stored one when none is given)")

	capped := planOpts()
	capped.Caps.Turns = 5
	c2, _, err := NewPlan(reg, capped)
	require.NoError(t, err)
	assert.Len(t, p.Changes(c2), 1)

	// A run.json from before runs named their agent was benched with pi.
	assert.Equal(t, "pi", p.AgentName())
	namedPi := planOpts()
	namedPi.Versions.AgentName = "pi"
	pi, _, err := NewPlan(reg, namedPi)
	require.NoError(t, err)
	assert.Empty(t, p.Changes(pi), "an unnamed agent is pi")
	codex := planOpts()
	codex.Versions.AgentName, codex.HarnessTools = "codex", []string{"read_mcp_resource"}
	cx, _, err := NewPlan(reg, codex)
	require.NoError(t, err)
	assert.Equal(t, "codex", cx.AgentName())
	assert.Contains(t, p.Changes(cx), "agent: pi → codex (a run is benched with one agent)")
	assert.Contains(t, cx.Allowlist, "read_mcp_resource", "the harness tools join the allowlist")
}

func TestNewPlanSelection(t *testing.T) {
	reg := loadExamples(t)
	p, _, err := NewPlan(reg, planOpts("weather.example"))
	require.NoError(t, err)
	for _, in := range p.Intents {
		assert.Equal(t, "weather.example", in.Domain)
	}
	_, _, err = NewPlan(reg, planOpts("no-such-intent"))
	assert.ErrorContains(t, err, `no intent or domain named "no-such-intent"`)
	bad := planOpts()
	bad.Pairs = 0
	_, _, err = NewPlan(reg, bad)
	assert.Error(t, err)
}

func TestNewPlanSkipsStaleUnlessNamed(t *testing.T) {
	reg := loadExamples(t)
	// Give one intent a fixed date in the past.
	in := reg.Intents[0]
	in.Fixtures = map[string]intents.Fixture{"day": {Value: "2026-01-01"}}
	p, skipped, err := NewPlan(reg, planOpts())
	require.NoError(t, err)
	require.Len(t, skipped, 1)
	assert.Equal(t, in.ID, skipped[0].Intent)
	assert.Len(t, p.Intents, len(reg.Intents)-1)

	_, _, err = NewPlan(reg, planOpts(in.ID))
	assert.ErrorContains(t, err, "2026-01-01", "a stale intent named by its id cannot run")

	// Selected through its domain, as the Action selects, it is skipped
	// like validate says, and the domain's other intents run.
	p, skipped, err = NewPlan(reg, planOpts(in.Domain))
	require.NoError(t, err)
	require.Len(t, skipped, 1)
	assert.Equal(t, in.ID, skipped[0].Intent)
	for _, pi := range p.Intents {
		assert.NotEqual(t, in.ID, pi.ID)
		assert.Equal(t, in.Domain, pi.Domain)
	}
	assert.NotEmpty(t, p.Intents)
}

func TestTrialIntentsResolveAndCompile(t *testing.T) {
	reg := loadExamples(t)
	p, _, err := NewPlan(reg, planOpts())
	require.NoError(t, err)
	tis, err := TrialIntents(reg, p)
	require.NoError(t, err)
	require.Len(t, tis, len(p.Intents))
	for _, pi := range p.Intents {
		ti := tis[pi.ID]
		require.NotNil(t, ti, pi.ID)
		assert.NotContains(t, ti.Intent.Prompt, "{{", "%s: fixtures resolved", pi.ID)
		res := ti.Grader.Check(ti.Intent.Baseline.Answer)
		assert.Equal(t, pairbench.Correct, res.Outcome, "%s: baseline grades correct: %s", pi.ID, res.Reason)
		var names []string
		for _, tool := range ti.Tools {
			names = append(names, tool.Name)
			assert.NotEmpty(t, tool.Source, "%s: %s has its source for injection", pi.ID, tool.Name)
		}
		assert.Equal(t, pi.Tools, names)
	}
	p.Intents[0].Tools = append(p.Intents[0].Tools, "ghost_tool")
	_, err = TrialIntents(reg, p)
	assert.ErrorContains(t, err, "ghost_tool")
}

// TestPlanFreezesWhatIsBenched plans a run, then edits in turn each thing
// its trials are made of: a resume of the same options must see every
// change, named by file or setting, and a comment-only edit changes
// nothing.
func TestPlanFreezesWhatIsBenched(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("../examples/registry")))
	opts := planOpts("books-cheapest-by-author")
	opts.Trial = rundir.TrialSettings{StartDelayMS: 10000, SettleMS: 300}
	plan := func() *rundir.Plan {
		reg, err := intents.Load(dir)
		require.NoError(t, err)
		p, _, err := NewPlan(reg, opts)
		require.NoError(t, err)
		return p
	}
	frozen := plan()
	files := frozen.Intents[0].Files
	assert.Equal(t, []string{
		"bench/intents/books.example/books-cheapest-by-author.yaml",
		"domains/books.example/domain.json",
		"domains/books.example/tools/add_to_cart.js",
		"domains/books.example/tools/find_books.js",
		"domains/books.example/tools/list_genre.js",
	}, slices.Sorted(maps.Keys(files)))
	for _, h := range files {
		assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, h)
	}
	assert.Equal(t, rundir.DefaultPairAttempts, frozen.Trial.PairAttempts)

	edit := func(rel, old, new string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Contains(t, string(b), old)
		require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
	}
	const intent = "bench/intents/books.example/books-cheapest-by-author.yaml"
	edit(intent, "id: books-cheapest-by-author", "# a comment only\nid: books-cheapest-by-author")
	assert.Empty(t, frozen.Changes(plan()), "a comment is not what is benched")

	for _, c := range []struct{ file, old, new, want string }{
		{"domains/books.example/tools/find_books.js", "cheapest first", "dearest first", "books-cheapest-by-author: domains/books.example/tools/find_books.js changed"},
		{intent, "Paper Boats", "Paper Planes", "books-cheapest-by-author: " + intent + " changed"},
	} {
		edit(c.file, c.old, c.new)
		assert.Contains(t, frozen.Changes(plan()), c.want)
		edit(c.file, c.new, c.old)
	}
	assert.Empty(t, frozen.Changes(plan()))

	for name, change := range map[string]func(*PlanOptions){
		"start delay: 10s → 0s":  func(o *PlanOptions) { o.Trial.StartDelayMS = 0 },
		"settle: 300ms → 1s":     func(o *PlanOptions) { o.Trial.SettleMS = 1000 },
		"adoption trials: 0 → 2": func(o *PlanOptions) { o.Trial.Adoption = 2 },
		"alpha: 0.05 → 0.1":      func(o *PlanOptions) { o.Alpha = 0.1 },
		"seed: 42 → 7":           func(o *PlanOptions) { o.Seed = 7 },
	} {
		saved := opts
		change(&opts)
		assert.Equal(t, []string{name}, frozen.Changes(plan()))
		opts = saved
	}
}
