package action

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/runner"
)

// TestActionBenchesWhatThePullRequestChanged runs the Action on a pull
// request's checkout of a registry in git, with base main and no intents:
// the domain whose tool the pull request edits is benched head against
// main's tools, the untouched domain not at all; with nothing changed the
// Action benches nothing and says so.
func TestActionBenchesWhatThePullRequestChanged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real bench (Chromium, pi in bubblewrap); not in -short")
	}
	repo := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
	require.NoError(t, os.CopyFS(repo, os.DirFS(filepath.Join(root, "examples/registry"))))
	git("init", "--quiet", "-b", "main")
	git("add", ".")
	git("commit", "--quiet", "-m", "main")
	mainCommit := git("rev-parse", "HEAD")
	git("checkout", "--quiet", "-b", "pr")

	b := newBench(t)
	with := map[string]string{"registry": repo, "intents": "", "base": "main", "pairs": "1", "head": git("rev-parse", "HEAD"),
		"s3-bucket": "", "s3-prefix": "", "s3-endpoint": "", "s3-region": ""}
	quiet := b.mustRun("unchanged", b.inputs(with))
	assert.Contains(t, quiet.Summary, "pairbench: nothing to bench")
	assert.Empty(t, quiet.Outputs["worst-label"])

	tool := filepath.Join(repo, "domains", "weather.example", "tools", "list_cities.js")
	src, err := os.ReadFile(tool)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tool, append(src, "// the pull request's edit\n"...), 0o644))
	git("commit", "--quiet", "-am", "edit list_cities")
	with["run-id"], with["head"] = "gh-changes", git("rev-parse", "HEAD")
	res := b.mustRun("changed", b.inputs(with))
	plan, err := runner.ReadPlan(filepath.Join(res.Temp, "pairbench-action", "runs", "gh-changes", "run.json"))
	require.NoError(t, err)
	require.NotNil(t, plan.Arms)
	assert.Equal(t, "tools@main", plan.Arms.Control.String())
	assert.Equal(t, mainCommit, plan.Arms.Control.Commit)
	var ids []string
	for _, in := range plan.Intents {
		ids = append(ids, in.ID)
	}
	assert.Equal(t, []string{"weather-high-oslo"}, ids, "books is untouched: not benched")
	assert.Contains(t, res.Summary, "main@")

	with["head"] = mainCommit[:7] + "0000000"
	bad, err := b.run("wrong-head", b.inputs(with))
	require.NoError(t, err)
	assert.True(t, bad.Failed)
	assert.Contains(t, bad.Log, "is not the checked-out commit")
}
