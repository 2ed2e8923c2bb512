package action

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/rundir"
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
	repo, git := exampleRepo(t, "")
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
	plan, err := rundir.ReadPlan(filepath.Join(res.Temp, "pairbench-action", "runs", "gh-changes", "run.json"))
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

// TestActionBenchesAServiceDispatchAgainstItsBase runs the example
// workflow's plan job as the service dispatches it: the inputs
// bot.WorkflowInputs sends for a bench of a pull request's changes (its
// base commit among them), through the job's with: expressions, into the
// Action, on a shallow checkout of the pull request's head. The pull
// request edits a weather tool; main edited a books tool after the branch
// was made. The plan benches weather against the base's tools and leaves
// books alone: the changes are counted from where the branch left main,
// which the Action fetched into the shallow checkout.
func TestActionBenchesAServiceDispatchAgainstItsBase(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the smoke gate in a real browser (Chromium, pi in bubblewrap); not in -short")
	}
	upstream := t.TempDir()
	git := gitAt(t, upstream)
	appendTo := func(name, line string) {
		f, err := os.OpenFile(filepath.Join(upstream, name), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(line)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	require.NoError(t, os.CopyFS(upstream, os.DirFS(filepath.Join(root, "examples/registry"))))
	git("init", "--quiet", "-b", "main")
	git("add", ".")
	git("commit", "--quiet", "-m", "main")
	for i := range 3 { // history below the fork point, which a shallow clone lacks
		git("commit", "--quiet", "--allow-empty", "-m", fmt.Sprint("main ", i))
	}
	git("checkout", "--quiet", "-b", "pr")
	appendTo("domains/weather.example/tools/list_cities.js", "// the pull request's edit\n")
	git("commit", "--quiet", "-am", "edit list_cities")
	git("commit", "--quiet", "--allow-empty", "-m", "a second commit on the branch")
	head := git("rev-parse", "HEAD")
	git("checkout", "--quiet", "main")
	appendTo("domains/books.example/tools/find_books.js", "// edited on main since the branch\n")
	git("commit", "--quiet", "-am", "edit find_books on main")
	base := git("rev-parse", "HEAD")

	// actions/checkout of head_sha: one commit deep.
	work := filepath.Join(t.TempDir(), "checkout")
	out, err := exec.Command("git", "clone", "--quiet", "--depth", "1", "--branch", "pr", "file://"+upstream, work).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "true", gitAt(t, work)("rev-parse", "--is-shallow-repository"))

	run := fmt.Sprintf("pr%d-%s-0123abcd", prNumber, head)
	dispatched, err := bot.WorkflowInputs(bot.Request{RunID: bot.RunID(run), PR: prNumber, HeadSHA: head,
		Domains: []string{"weather.example"}, Pairs: 1, Base: base})
	require.NoError(t, err)
	with := exampleJobWith(t, "plan", dispatched)
	assert.Equal(t, base, with["base"])
	assert.Equal(t, head, with["head"])
	assert.Empty(t, with["intents"], "a bench of the changes names no intents")

	b := newBench(t)
	in := b.inputs(map[string]string{"registry": work, "intents": "", "pairs": with["pairs"], "mode": with["mode"],
		"run-id": with["run-id"], "total-shards": with["total-shards"], "base": with["base"], "head": with["head"]})
	res := b.mustRun("dispatched", in)
	assert.Equal(t, "[1,2,3]", res.Outputs["shards"])

	plan := storedPlan(t, b, run)
	require.NotNil(t, plan.Arms)
	assert.Equal(t, "tools@"+base, plan.Arms.Control.String())
	assert.Equal(t, base, plan.Arms.Control.Commit)
	var ids []string
	for _, in := range plan.Intents {
		ids = append(ids, in.ID)
		require.NotNil(t, in.Arms)
		assert.NotEmpty(t, in.Arms.Control.Tools, "%s: against the base's tools", in.ID)
	}
	assert.Equal(t, []string{"weather-high-oslo"}, ids, "books changed on main after the branch, not in the pull request")

	// /bench run INTENT…: the named intents, each domain as its changes
	// choose; books is untouched by the pull request, so against no tools.
	run = fmt.Sprintf("pr%d-%s-4567cdef", prNumber, head)
	dispatched, err = bot.WorkflowInputs(bot.Request{RunID: bot.RunID(run), PR: prNumber, HeadSHA: head,
		Domains: []string{"books.example", "weather.example"}, Intents: []string{"books-count-by-author", "weather-high-oslo"}, Pairs: 1, Base: base})
	require.NoError(t, err)
	with = exampleJobWith(t, "plan", dispatched)
	in = b.inputs(map[string]string{"registry": work, "intents": with["intents"], "pairs": with["pairs"], "mode": with["mode"],
		"run-id": with["run-id"], "total-shards": with["total-shards"], "base": with["base"], "head": with["head"]})
	b.mustRun("named", in)
	plan = storedPlan(t, b, run)
	against := map[string]string{}
	for _, in := range plan.Intents {
		require.NotNil(t, in.Arms)
		against[in.ID] = "base"
		if in.Arms.Control.None {
			against[in.ID] = "none"
		}
	}
	assert.Equal(t, map[string]string{"weather-high-oslo": "base", "books-count-by-author": "none"}, against)
}

// gitAt returns a function that runs git in dir and returns its output.
func gitAt(t *testing.T, dir string) func(args ...string) string {
	return func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
}

// exampleJobWith evaluates the with: of the example workflow's step that
// uses the Action in job, given the workflow_dispatch inputs (and no
// repository variables or secrets), as GitHub would.
func exampleJobWith(t *testing.T, job string, dispatched map[string]any) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "examples/workflows/pairbench.yml"))
	require.NoError(t, err)
	var wf workflowSteps
	require.NoError(t, yaml.Unmarshal(data, &wf))
	c := &exprContext{vars: map[string]any{"inputs": dispatched, "vars": map[string]any{}, "secrets": map[string]any{}}}
	for _, st := range wf.Jobs[job].Steps {
		if !strings.HasPrefix(st.Uses, "pairbench/pairbench@") {
			continue
		}
		out := map[string]string{}
		for k, v := range st.With {
			out[k], err = c.template(toString(v))
			require.NoError(t, err, "job %s, with %s", job, k)
		}
		return out
	}
	t.Fatalf("job %s of the example workflow does not use the Action", job)
	return nil
}

// storedPlan reads run's run.json from the test's store.
func storedPlan(t *testing.T, b *bench, run string) *rundir.Plan {
	t.Helper()
	r, err := b.store().Get(context.Background(), run+"/"+rundir.PlanFile)
	require.NoError(t, err)
	defer r.Close()
	path := filepath.Join(t.TempDir(), rundir.PlanFile)
	data, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	plan, err := rundir.ReadPlan(path)
	require.NoError(t, err)
	return plan
}

// TestActionRunsBothComparisons: with compare: both in .pairbench.yml, a
// pull request that edits a weather tool is benched head against base and,
// in a second run (<run id>-none), head against no tools; the step summary
// shows both, each named by its arms, and the artifact holds both runs.
func TestActionRunsBothComparisons(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real benches (Chromium, pi in bubblewrap); not in -short")
	}
	repo, git := weatherPullRequest(t, "compare: both\n")

	b := newBench(t)
	res := b.mustRun("both", b.inputs(map[string]string{"registry": repo, "intents": "", "base": "main", "pairs": "1",
		"head": git("rev-parse", "HEAD"), "run-id": "gh-both", "s3-bucket": "", "s3-prefix": "", "s3-endpoint": "", "s3-region": ""}))
	runs := filepath.Join(res.Temp, "pairbench-action", "runs")
	base, err := rundir.ReadPlan(filepath.Join(runs, "gh-both", "run.json"))
	require.NoError(t, err)
	require.NotNil(t, base.Arms)
	assert.Equal(t, "tools@main", base.Arms.Control.String())
	none, err := rundir.ReadPlan(filepath.Join(runs, "gh-both-none", "run.json"))
	require.NoError(t, err)
	assert.True(t, none.Arms == nil || none.Arms.IsDefault(), "the second run is against no tools")
	for _, p := range []*rundir.Plan{base, none} {
		require.Len(t, p.Intents, 1)
		assert.Equal(t, "weather-high-oslo", p.Intents[0].ID)
	}
	assert.Contains(t, res.Summary, "main@", "the first comparison names base's tools")
	assert.Contains(t, res.Summary, "also against no tools (run `gh-both-none`)")
	assert.NotEmpty(t, res.Outputs["worst-label"])
	assert.NotEmpty(t, res.Outputs["against-none-label"])
	assert.Equal(t, runs, res.step("Upload the run or its report site as a workflow artifact").With["path"], "both runs are uploaded")
}

// TestActionShardedRunBothComparisons runs compare: both the example
// workflow's way, a plan job, two shard jobs and an aggregate job meeting
// in a real S3 store: the plan job plans the run against base and its
// second run against no tools (<run id>-none), each shard job runs its
// shard of both, and merge-and-report merges, reports and publishes both,
// summarizing the second below the first with its verdict in
// against-none-label, and links the first.
func TestActionShardedRunBothComparisons(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real benches (Chromium, pi in bubblewrap); not in -short")
	}
	repo, git := weatherPullRequest(t, "compare: both\n")

	b := newBench(t)
	with := func(extra map[string]string) map[string]string {
		in := map[string]string{"registry": repo, "intents": "", "base": "main", "pairs": "2", "head": git("rev-parse", "HEAD"),
			"run-id": "gh-both-sharded", "total-shards": "2"}
		for k, v := range extra {
			in[k] = v
		}
		return b.inputs(in)
	}
	plan := b.mustRun("plan", with(map[string]string{"mode": "plan"}))
	assert.Equal(t, "[1,2]", plan.Outputs["shards"])
	assert.Contains(t, plan.Summary, "planned run `gh-both-sharded` in 2 shards")
	assert.Contains(t, plan.Summary, "and run `gh-both-sharded-none`")
	first := storedPlan(t, b, "gh-both-sharded")
	require.NotNil(t, first.Arms)
	assert.Equal(t, "tools@main", first.Arms.Control.String())
	assert.Equal(t, []string{"weather.example"}, first.AlsoAgainstNone)
	second := storedPlan(t, b, "gh-both-sharded-none")
	assert.True(t, second.Arms == nil || second.Arms.IsDefault(), "the second run is against no tools")
	require.Len(t, second.Intents, 1)
	assert.Equal(t, "weather-high-oslo", second.Intents[0].ID)

	for k := 1; k <= 2; k++ {
		res := b.mustRun(fmt.Sprintf("shard%d", k), with(map[string]string{"mode": "run", "shard": fmt.Sprint(k)}))
		assert.Contains(t, res.Summary, fmt.Sprintf("shard %d/2 of run `gh-both-sharded` done", k))
		assert.Contains(t, res.Summary, fmt.Sprintf("shard %d/2 of run `gh-both-sharded-none`", k))
		for _, run := range []string{"gh-both-sharded", "gh-both-sharded-none"} {
			assert.True(t, b.exists(fmt.Sprintf("%s/shards/%d/rows.jsonl", run, k)), "shard %d of %s", k, run)
		}
	}

	site := b.siteHost()
	agg := b.mustRun("aggregate", with(map[string]string{"mode": "merge-and-report", "site-url": site + "/runs"}))
	merged := filepath.Join(agg.Temp, "pairbench-action", "merged")
	assert.Equal(t, site+"/runs/gh-both-sharded/report.html", agg.Outputs["report-url"], "the link is the first comparison's")
	assert.Equal(t, filepath.Join(merged, "gh-both-sharded", "report.html"), agg.Outputs["report-path"])
	assert.Contains(t, agg.Summary, "main@", "the first comparison names base's tools")
	assert.Contains(t, agg.Summary, "also against no tools (run `gh-both-sharded-none`)")
	assert.Equal(t, string(readReport(t, filepath.Join(merged, "gh-both-sharded")).Verdict), agg.Outputs["worst-label"])
	assert.Equal(t, string(readReport(t, filepath.Join(merged, "gh-both-sharded-none")).Verdict), agg.Outputs["against-none-label"])
	assert.NotEmpty(t, agg.Outputs["against-none-label"])
	assert.True(t, b.exists("gh-both-sharded/report.json"))
	assert.True(t, b.exists("gh-both-sharded-none/report.json"), "the second comparison is published too")

	// Without a site, the artifact holds both merged runs.
	bare := b.mustRun("aggregate-bare", with(map[string]string{"mode": "merge-and-report"}))
	assert.Equal(t, filepath.Join(bare.Temp, "pairbench-action", "merged"),
		bare.step("Upload the run or its report site as a workflow artifact").With["path"], "both runs are uploaded")
	assert.NotEmpty(t, bare.Outputs["against-none-label"])
}

// weatherPullRequest is exampleRepo on branch pr, one commit past main
// that edits a weather tool.
func weatherPullRequest(t *testing.T, config string) (string, func(args ...string) string) {
	t.Helper()
	repo, git := exampleRepo(t, config)
	git("checkout", "--quiet", "-b", "pr")
	tool := filepath.Join(repo, "domains", "weather.example", "tools", "list_cities.js")
	src, err := os.ReadFile(tool)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tool, append(src, "// the pull request's edit\n"...), 0o644))
	git("commit", "--quiet", "-am", "edit list_cities")
	return repo, git
}

// exampleRepo commits the example registry, with config appended to its
// .pairbench.yml, on main of a new git repository, and returns the
// repository and a function that runs git in it.
func exampleRepo(t *testing.T, config string) (string, func(args ...string) string) {
	t.Helper()
	repo := t.TempDir()
	git := gitAt(t, repo)
	require.NoError(t, os.CopyFS(repo, os.DirFS(filepath.Join(root, "examples/registry"))))
	cfg := filepath.Join(repo, ".pairbench.yml")
	data, err := os.ReadFile(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfg, append(data, config...), 0o644))
	git("init", "--quiet", "-b", "main")
	git("add", ".")
	git("commit", "--quiet", "-m", "main")
	return repo, git
}
