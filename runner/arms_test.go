package runner

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
)

func TestParseArmSpec(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want rundir.ArmSpec
	}{
		{"none", rundir.ArmSpec{Tools: rundir.NoTools}},
		{"tools", rundir.ArmSpec{Tools: rundir.RegistryTools}},
		{"tools@main", rundir.ArmSpec{Tools: rundir.RevTools, Rev: "main"}},
		{"tools@HEAD~1", rundir.ArmSpec{Tools: rundir.RevTools, Rev: "HEAD~1"}},
		{"context", rundir.ArmSpec{Tools: rundir.NoTools, Context: true}},
		{"tools+context", rundir.ArmSpec{Tools: rundir.RegistryTools, Context: true}},
		{"tools@v1.2+context", rundir.ArmSpec{Tools: rundir.RevTools, Rev: "v1.2", Context: true}},
	} {
		got, err := rundir.ParseArmSpec(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
		assert.Equal(t, tc.in, got.String(), "String reads back")
	}
	for _, bad := range []string{"", "tool", "context+tools", "none+context", "tools+tools", "tools@", "tools@-x", "tools+context+context", "both"} {
		_, err := rundir.ParseArmSpec(bad)
		assert.Error(t, err, bad)
	}
	assert.True(t, rundir.DefaultArms.IsDefault())
	assert.Equal(t, []string{"main", "v2"}, rundir.PlanArms{Control: rundir.ArmSpec{Tools: rundir.RevTools, Rev: "main"}, Treatment: rundir.ArmSpec{Tools: rundir.RevTools, Rev: "v2"}}.Revs())
}

// gitRegistry copies the example registry into a new git repository,
// commits it on main, and returns the repository and a function that runs
// git in it.
func gitRegistry(t *testing.T) (string, func(args ...string) string) {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	require.NoError(t, os.CopyFS(filepath.Join(dir, "registry"), os.DirFS("../examples/registry")))
	run("init", "--quiet", "-b", "main")
	run("add", ".")
	run("commit", "--quiet", "-m", "base")
	return dir, run
}

// TestArmsPlanReadsToolsAtARevision: --against main on a PR branch that
// edits a tool, adds one and a context pack: the plan
// freezes each arm's tools and their hashes at its revision, the new
// domain is absent at main, the trials register main's file in control,
// and the working tree is never touched.
func TestArmsPlanReadsToolsAtARevision(t *testing.T) {
	repo, git := gitRegistry(t)
	reg := filepath.Join(repo, "registry")
	books := filepath.Join(reg, "domains", "books.example")
	mainCommit := git("rev-parse", "HEAD")
	git("checkout", "--quiet", "-b", "pr")
	find := filepath.Join(books, "tools", "find_books.js")
	src, err := os.ReadFile(find)
	require.NoError(t, err)
	edited := strings.Replace(string(src), `"/api/books?author="`, `"/api/books?athor="`, 1)
	require.NotEqual(t, string(src), edited)
	require.NoError(t, os.WriteFile(find, []byte(edited), 0o644))
	added := strings.Replace(string(src), `name: "find_books"`, `name: "search_books"`, 1)
	require.NoError(t, os.WriteFile(filepath.Join(books, "tools", "search_books.js"), []byte(added), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(books, "notes.md"), []byte("Search by author at /search?author=NAME."), 0o644))
	dj := filepath.Join(books, "domain.json")
	require.NoError(t, os.WriteFile(dj, []byte(`{"start_urls": ["http://books.example/*"], "context": "notes.md"}`), 0o644))
	git("add", "-A")
	git("commit", "--quiet", "-m", "pr")
	headBefore := git("rev-parse", "HEAD")

	commit, tree, err := GitTreeAt(t.Context(), reg, "main")
	require.NoError(t, err)
	assert.Equal(t, mainCommit, commit)
	base, err := intents.LoadFS(tree, "registry@main")
	require.NoError(t, err)
	got, err := os.ReadFile(find)
	require.NoError(t, err)
	assert.Equal(t, edited, string(got), "the working tree stays at the PR")
	assert.Equal(t, headBefore, git("rev-parse", "HEAD"))

	head, err := intents.Load(reg)
	require.NoError(t, err)
	// A news.example intent, so the new domain is planned.
	opts := planOpts()
	opts.Arms = rundir.PlanArms{Control: rundir.ArmSpec{Tools: rundir.RevTools, Rev: "main", Commit: commit}, Treatment: rundir.ArmSpec{Tools: rundir.RegistryTools, Context: true}}
	opts.Revs = map[string]*intents.Registry{"main": base}
	_, _, err = NewPlan(head, opts)
	require.ErrorContains(t, err, "domain weather.example names no context pack", "context asked of a domain without a pack")

	opts.Intents = []string{"books.example"}
	p, _, err := NewPlan(head, opts)
	require.NoError(t, err)
	require.NotNil(t, p.Arms)
	assert.Equal(t, mainCommit, p.Arms.Control.Commit)
	in := p.Intents[0]
	require.NotNil(t, in.Arms)
	assert.Equal(t, []string{"find_books", "list_genre"}, sortedCopy(in.Arms.Control.Names()), "main's tools")
	assert.Equal(t, []string{"find_books", "list_genre", "search_books"}, sortedCopy(in.Arms.Treatment.Names()), "the PR's tools")
	assert.Equal(t, in.Tools, in.Arms.Treatment.Names())
	path := "domains/books.example/tools/find_books.js"
	assert.Contains(t, in.Arms.Control.Tools, rundir.ArmTool{Name: "find_books", File: path, Hash: contentHash(src)})
	assert.Contains(t, in.Arms.Treatment.Tools, rundir.ArmTool{Name: "find_books", File: path, Hash: contentHash([]byte(edited))})
	assert.Equal(t, "domains/books.example/notes.md", in.Arms.Treatment.Context)
	assert.Equal(t, contentHash([]byte("Search by author at /search?author=NAME.")), in.Arms.Treatment.ContextHash)
	assert.Empty(t, in.Arms.Control.Context, "control has no context")

	// run.json keeps the arms; the trials register each arm's own files.
	b, err := json.Marshal(p)
	require.NoError(t, err)
	var back rundir.Plan
	require.NoError(t, json.Unmarshal(b, &back))
	require.NoError(t, back.Validate())
	assert.Equal(t, p.Arms, back.Arms)
	_, err = ArmTrialIntents(head, nil, &back)
	assert.ErrorContains(t, err, "the registry at main")
	tis, err := ArmTrialIntents(head, opts.Revs, &back)
	require.NoError(t, err)
	ti := tis["books-count-by-author"]
	control := ti.ArmTools(pairbench.Control)
	require.Len(t, control, 2)
	for _, tool := range control {
		if tool.Name == "find_books" {
			assert.Equal(t, string(src), tool.Source, "control registers main's file")
		}
	}
	for _, tool := range ti.ArmTools(pairbench.Treatment) {
		if tool.Name == "find_books" {
			assert.Equal(t, edited, tool.Source, "treatment registers the PR's file")
		}
	}
	assert.Equal(t, ti.Intent.Prompt, strings.TrimPrefix(ti.ArmPrompt(pairbench.Control), ContextBlock("")), "control's block is empty")
	assert.Equal(t, ContextBlock("Search by author at /search?author=NAME.")+ti.Intent.Prompt, ti.ArmPrompt(pairbench.Treatment))

	// A new domain is absent at main: its control is none.
	opts.Arms.Treatment.Context = false
	opts.Intents = []string{"weather.example"}
	opts.Revs = map[string]*intents.Registry{"main": withoutDomain(t, base, "weather.example")}
	p, _, err = NewPlan(head, opts)
	require.NoError(t, err)
	assert.True(t, p.Intents[0].Arms.Control.Absent)
	assert.Empty(t, p.Intents[0].Arms.Control.Tools)
	tis, err = ArmTrialIntents(head, opts.Revs, p)
	require.NoError(t, err)
	assert.Empty(t, tis["weather-high-oslo"].ArmTools(pairbench.Control), "benched against none")
	assert.False(t, tis["weather-high-oslo"].Contexted)
	assert.Equal(t, tis["weather-high-oslo"].Intent.Prompt, tis["weather-high-oslo"].ArmPrompt(pairbench.Treatment))
}

// TestArmsChangesRefuseAnotherBase: a resume whose arms, base commit,
// tool files or context differ is a changed plan.
func TestArmsChangesRefuseAnotherBase(t *testing.T) {
	reg := loadExamples(t)
	opts := planOpts("books-count-by-author")
	opts.Arms = rundir.PlanArms{Control: rundir.ArmSpec{Tools: rundir.RevTools, Rev: "main", Commit: "aaaa"}, Treatment: rundir.ArmSpec{Tools: rundir.RegistryTools}}
	opts.Revs = map[string]*intents.Registry{"main": reg}
	p, _, err := NewPlan(reg, opts)
	require.NoError(t, err)
	q, _, err := NewPlan(reg, opts)
	require.NoError(t, err)
	assert.Empty(t, p.Changes(q))

	opts.Arms.Control.Commit = "bbbb"
	q, _, err = NewPlan(reg, opts)
	require.NoError(t, err)
	assert.Equal(t, []string{"control arm: main is now commit bbbb, not aaaa"}, p.Changes(q))

	opts.Arms.Control = rundir.ArmSpec{Tools: rundir.NoTools}
	q, _, err = NewPlan(reg, opts)
	require.NoError(t, err)
	assert.Nil(t, q.Arms, "none against tools records no arms, as before")
	assert.Contains(t, p.Changes(q), "control arm: tools@main → none")

	var old rundir.Plan
	require.NoError(t, json.Unmarshal([]byte(`{"v":1}`), &old))
	assert.Equal(t, rundir.DefaultArms, old.ArmSpecs(), "a run.json without arms compared none against tools")
}

func withoutDomain(t *testing.T, reg *intents.Registry, name string) *intents.Registry {
	t.Helper()
	out := *reg
	out.Domains = nil
	for _, d := range reg.Domains {
		if d.Name != name {
			out.Domains = append(out.Domains, d)
		}
	}
	return &out
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	slices.Sort(out)
	return out
}
