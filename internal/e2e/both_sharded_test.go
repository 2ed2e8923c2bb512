//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/rundir"
)

// TestShardedRunComparesBoth benches a pull request of a registry whose
// .pairbench.yml asks for both comparisons (compare: both) as the example
// workflow does, split over two runners that meet in a real S3 store: the
// plan job plans the run against base and its second run against no tools
// (<run id>-none), each shard runs its share of both, and merge --report
// merges, reports and publishes both.
func TestShardedRunComparesBoth(t *testing.T) {
	tools := clitest.RealStack(t)
	bin := clitest.Build(t)
	store := clitest.StartS3(t, "both")
	repo := t.TempDir()
	git := clitest.GitIn(t, repo)
	reg := filepath.Join(repo, "reg")
	require.NoError(t, os.CopyFS(reg, os.DirFS(clitest.ExampleRegistry)))
	appendTo := func(name, line string) { clitest.AppendLine(t, filepath.Join(reg, name), line) }
	appendTo(".pairbench.yml", "compare: both\n")
	git("init", "--quiet", "-b", "main")
	git("add", ".")
	git("commit", "--quiet", "-m", "registry")
	git("checkout", "--quiet", "-b", "pr")
	appendTo("domains/weather.example/tools/list_cities.js", "// the pull request's edit\n")
	git("commit", "--quiet", "-am", "edit list_cities")

	args := func(runs string, more ...string) []string {
		return append([]string{"run", reg, "--changes", "main", "--example-sites", "--pairs", "2", "--start-delay", "0",
			"--run-id", "b1", "--runs-dir", runs, "--store", store, "--tools", tools, "--seed", "5", "--time-cap", "600"}, more...)
	}
	plans := t.TempDir()
	code, stdout, stderr := runBin(t, bin, args(plans, "--plan-only")...)
	require.Equal(t, clitest.ExitOK, code, stderr)
	assert.Equal(t, filepath.Join(plans, "b1", "run.json")+"\n"+filepath.Join(plans, "b1-none", "run.json")+"\n", stdout,
		"both runs are planned")
	assert.NotContains(t, stderr, "against base only")
	s, err := artifacts.Open(context.Background(), store)
	require.NoError(t, err)
	exists := func(key string) bool {
		ok, err := artifacts.Exists(context.Background(), s, key)
		require.NoError(t, err)
		return ok
	}
	base, err := rundir.ReadPlan(filepath.Join(plans, "b1", "run.json"))
	require.NoError(t, err)
	require.NotNil(t, base.Arms)
	assert.Equal(t, "tools@main", base.Arms.Control.String())
	assert.Equal(t, []string{"weather.example"}, base.AlsoAgainstNone, "the plan names its second run's domains")
	none, err := rundir.ReadPlan(filepath.Join(plans, "b1-none", "run.json"))
	require.NoError(t, err)
	assert.True(t, none.Arms == nil || none.Arms.IsDefault(), "the second run is against no tools")
	assert.Empty(t, none.AlsoAgainstNone)
	for _, p := range []*rundir.Plan{base, none} {
		require.Len(t, p.Intents, 1)
		assert.Equal(t, "weather-high-oslo", p.Intents[0].ID)
	}
	assert.True(t, exists("b1/run.json"))
	assert.True(t, exists("b1-none/run.json"), "the second plan is stored for the shards")

	for k := 1; k <= 2; k++ {
		code, _, stderr = runBin(t, bin, args(t.TempDir(), "--shard", fmt.Sprintf("%d/2", k))...)
		require.Equal(t, clitest.ExitOK, code, "shard %d: %s", k, stderr)
		for _, run := range []string{"b1", "b1-none"} {
			assert.True(t, exists(fmt.Sprintf("%s/shards/%d/rows.jsonl", run, k)), "shard %d of %s", k, run)
		}
	}
	assert.False(t, exists("b1/report.json"), "no shard publishes a report")
	assert.False(t, exists("b1-none/report.json"), "no shard publishes a report")

	out := filepath.Join(t.TempDir(), "merged")
	code, stdout, stderr = runBin(t, bin, "merge", "--store", store, "--run-id", "b1", "--out", out, "--report",
		"--site-url", "https://reports.example/")
	require.Equal(t, clitest.ExitOK, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	assert.Equal(t, []string{out, out + "-none"}, lines[:2])
	assert.Contains(t, lines, "https://reports.example/b1/report.html")
	assert.Equal(t, "https://reports.example/b1-none/report.html", lines[len(lines)-1])
	for dir, againstBase := range map[string]bool{out: true, out + "-none": false} {
		rep := clitest.ReadReport(t, dir)
		require.Len(t, rep.Intents, 1, dir)
		assert.Equal(t, 2, rep.Intents[0].Pairs.Complete, "%s: every pair of both shards", dir)
		assert.NotEmpty(t, rep.Verdict, dir)
		md, err := os.ReadFile(filepath.Join(dir, "report.md"))
		require.NoError(t, err)
		assert.Equal(t, againstBase, strings.Contains(string(md), "main@"), "%s: only the first names base's tools", dir)
	}
	assert.True(t, exists("b1/report.json"))
	assert.True(t, exists("b1-none/report.json"), "the second comparison is published for the service and the Action")
}
