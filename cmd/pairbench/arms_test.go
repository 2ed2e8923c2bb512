package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/rundir"
)

func TestRunArmFlagErrorsExitTwo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--control", "tool"}, "--control"},
		{[]string{"--treatment", "context+tools"}, "--treatment"},
		{[]string{"--against", "main", "--control", "none"}, "give one or the others"},
		{[]string{"--control", "tools", "--treatment", "tools"}, "both tools"},
	} {
		code, _, stderr := runCLI(t, append([]string{"run", "../../examples/registry"}, tc.args...)...)
		assert.Equal(t, exitUsage, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.says, tc.args)
	}
}

// TestRunAgainstARevision plans --against main from a PR branch of a
// registry directory in a git working tree: the smoke gate checks both
// arms' setups in a real browser, run.json freezes main's commit and both
// arms' tool files, and the working tree is left as it was.
func TestRunAgainstARevision(t *testing.T) {
	realstack.Need(t)
	repo := t.TempDir()
	git := clitest.GitIn(t, repo)
	reg := filepath.Join(repo, "reg")
	require.NoError(t, os.CopyFS(reg, os.DirFS("../../examples/registry")))
	git("init", "--quiet", "-b", "main")
	git("add", ".")
	git("commit", "--quiet", "-m", "registry")
	mainCommit := git("rev-parse", "HEAD")
	git("checkout", "--quiet", "-b", "pr")
	tool := filepath.Join(reg, "domains", "books.example", "tools", "find_books.js")
	src, err := os.ReadFile(tool)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tool, append(src, []byte("// a refactor\n")...), 0o644))
	git("commit", "--quiet", "-am", "refactor")

	runs := t.TempDir()
	code, _, stderr := runCLI(t, "run", reg, "--against", "main", "--example-sites", "--intent", "books-count-by-author", "--pairs", "1",
		"--start-delay", "0", "--run-id", "a1", "--runs-dir", runs, "--tools", "../../tools/node_modules", "--plan-only")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "smoke gate")
	plan, err := rundir.ReadPlan(filepath.Join(runs, "a1", "run.json"))
	require.NoError(t, err)
	require.NotNil(t, plan.Arms)
	assert.Equal(t, "tools@main", plan.Arms.Control.String())
	assert.Equal(t, mainCommit, plan.Arms.Control.Commit)
	assert.Equal(t, "tools", plan.Arms.Treatment.String())
	arms := plan.Intents[0].Arms
	require.NotNil(t, arms)
	assert.Equal(t, arms.Control.Names(), arms.Treatment.Names())
	assert.NotEqual(t, arms.Control.Tools, arms.Treatment.Tools, "the PR's edit is frozen as a different file")
	assert.Equal(t, "pr", git("rev-parse", "--abbrev-ref", "HEAD"), "the working tree is untouched")
}

// TestRunChanges plans --changes main from a PR branch that edits a books
// tool and an intent of weather: books is benched against main's tools,
// weather (its intents alone changed) against no tools; with nothing
// changed the run says so and succeeds.
func TestRunChanges(t *testing.T) {
	realstack.Need(t)
	repo := t.TempDir()
	git := clitest.GitIn(t, repo)
	reg := filepath.Join(repo, "reg")
	require.NoError(t, os.CopyFS(reg, os.DirFS("../../examples/registry")))
	git("init", "--quiet", "-b", "main")
	git("add", ".")
	git("commit", "--quiet", "-m", "registry")
	git("checkout", "--quiet", "-b", "pr")

	runs := t.TempDir()
	args := []string{"run", reg, "--changes", "main", "--example-sites", "--pairs", "1", "--start-delay", "0",
		"--runs-dir", runs, "--tools", "../../tools/node_modules", "--plan-only"}
	code, stdout, stderr := runCLI(t, append(args, "--run-id", "c0")...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "nothing to bench: no domain of "+reg+" changed since main")
	assert.NoDirExists(t, filepath.Join(runs, "c0"))

	tool := filepath.Join(reg, "domains", "books.example", "tools", "find_books.js")
	src, err := os.ReadFile(tool)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tool, append(src, []byte("// edited\n")...), 0o644))
	intent := filepath.Join(reg, "bench", "intents", "weather.example", "weather-high-oslo.yaml")
	src, err = os.ReadFile(intent)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(intent, append(src, []byte("# edited\n")...), 0o644))
	code, _, stderr = runCLI(t, append(args, "--run-id", "c1")...)
	require.Equal(t, exitOK, code, stderr)
	plan, err := rundir.ReadPlan(filepath.Join(runs, "c1", "run.json"))
	require.NoError(t, err)
	require.NotNil(t, plan.Arms)
	assert.Equal(t, "tools@main", plan.Arms.Control.String())
	domains := map[string]bool{}
	for _, in := range plan.Intents {
		domains[in.Domain] = true
		require.NotNil(t, in.Arms)
		if in.Domain == "weather.example" {
			assert.True(t, in.Arms.Control.None, "its intents alone changed: against no tools")
			assert.Empty(t, in.Arms.Control.Tools)
		} else {
			assert.False(t, in.Arms.Control.None)
			assert.NotEmpty(t, in.Arms.Control.Tools, "its tools changed: against main's")
		}
	}
	assert.Equal(t, map[string]bool{"books.example": true, "weather.example": true}, domains)

	code, _, stderr = runCLI(t, append(args, "--run-id", "c2", "--against", "main")...)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "give no --against with it")

	// Named intents: exactly those, each as its domain's changes choose.
	code, _, stderr = runCLI(t, append(args, "--run-id", "c3", "--intent", "books-count-by-author", "--intent", "weather-high-oslo")...)
	require.Equal(t, exitOK, code, stderr)
	plan, err = rundir.ReadPlan(filepath.Join(runs, "c3", "run.json"))
	require.NoError(t, err)
	var ids []string
	for _, in := range plan.Intents {
		ids = append(ids, in.ID)
		require.NotNil(t, in.Arms)
		if in.Domain == "weather.example" {
			assert.True(t, in.Arms.Control.None, "its intents alone changed: against no tools")
		} else {
			assert.NotEmpty(t, in.Arms.Control.Tools, "its tools changed: against main's")
		}
	}
	assert.Equal(t, []string{"books-count-by-author", "weather-high-oslo"}, ids, "the named intents, and no other of books")
}

// TestRunChangesFromGit benches a pull request read from git, as the
// service's local backend does: --changes BASE with --git-repo benches what
// the pull request changed since its merge base with BASE, not what BASE
// changed after the branch was made.
func TestRunChangesFromGit(t *testing.T) {
	realstack.Need(t)
	repo := t.TempDir()
	git := clitest.GitIn(t, repo)
	appendTo := func(name, line string) { clitest.AppendLine(t, filepath.Join(repo, "reg", name), line) }
	require.NoError(t, os.CopyFS(filepath.Join(repo, "reg"), os.DirFS("../../examples/registry")))
	git("init", "--quiet", "-b", "main")
	git("add", ".")
	git("commit", "--quiet", "-m", "registry")
	git("checkout", "--quiet", "-b", "pr")
	appendTo("domains/books.example/tools/find_books.js", "// edited\n")
	git("commit", "--quiet", "-am", "edit a books tool")
	git("checkout", "--quiet", "main")
	appendTo("domains/weather.example/tools/list_cities.js", "// edited on main\n")
	git("commit", "--quiet", "-am", "edit a weather tool on main")
	base := git("rev-parse", "HEAD")

	runs, cache := t.TempDir(), filepath.Join(t.TempDir(), "cache")
	code, _, stderr := runCLI(t, "run", "reg", "--git-repo", repo, "--git-ref", "pr", "--git-cache", cache, "--changes", base,
		"--example-sites", "--pairs", "1", "--start-delay", "0", "--run-id", "g1", "--runs-dir", runs,
		"--tools", "../../tools/node_modules", "--plan-only")
	require.Equal(t, exitOK, code, stderr)
	plan, err := rundir.ReadPlan(filepath.Join(runs, "g1", "run.json"))
	require.NoError(t, err)
	require.NotNil(t, plan.Arms)
	assert.Equal(t, "tools@"+base, plan.Arms.Control.String())
	assert.Equal(t, base, plan.Arms.Control.Commit)
	domains := map[string]bool{}
	for _, in := range plan.Intents {
		domains[in.Domain] = true
		require.NotNil(t, in.Arms)
		assert.NotEmpty(t, in.Arms.Control.Tools, "its tools changed: against the base's")
	}
	assert.Equal(t, map[string]bool{"books.example": true}, domains, "the weather tool changed on main, not in the pull request")
}
