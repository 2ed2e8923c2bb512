package action

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot"
)

// TestActionResumeTopsUpAShardedRun runs what the example workflow runs
// for a bench and then for the service's /bench more: a plan job, two
// shard jobs and an aggregate at 2 pairs per intent; then, every job on a
// fresh runner as on GitHub, a plan job with resume and 3 pairs, which
// tops the stored run up (its shards' rows in the store are no obstacle),
// the shards again, of which only the first has a new pair to run, and the
// aggregate, whose report counts all 3 pairs. Resume without a run id or a
// store, in a mode that plans nothing, or of a run the store does not hold
// is refused before anything is planned.
func TestActionResumeTopsUpAShardedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real benches (Chromium, pi in bubblewrap); not in -short")
	}
	b := newBench(t)
	const run = "gh-topped"
	common := map[string]string{"run-id": run, "intents": "weather-high-oslo", "looks": "1", "total-shards": "2"}
	with := func(extra map[string]string) map[string]string {
		in := map[string]string{}
		for _, m := range []map[string]string{common, extra} {
			for k, v := range m {
				in[k] = v
			}
		}
		return b.inputs(in)
	}
	shards := func(round, pairs string) []jobResult {
		t.Helper()
		res := make([]jobResult, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for k := range 2 {
			wg.Go(func() {
				res[k], errs[k] = b.run(fmt.Sprintf("%s-shard%d", round, k+1), with(map[string]string{"mode": "run", "pairs": pairs, "shard": fmt.Sprint(k + 1)}))
			})
		}
		wg.Wait()
		for k := range 2 {
			require.NoError(t, errs[k])
			require.False(t, res[k].Failed, "%s shard %d failed:\n%s", round, k+1, res[k].Log)
		}
		return res
	}
	runDir := func(res jobResult) string { return filepath.Join(res.Temp, "pairbench-action", "runs", run) }

	b.mustRun("plan", with(map[string]string{"mode": "plan", "pairs": "2"}))
	first := shards("first", "2")
	agg := b.mustRun("aggregate", with(map[string]string{"mode": "merge-and-report"}))
	rep := readReport(t, filepath.Join(agg.Temp, "pairbench-action", "merged", run))
	require.Len(t, rep.Intents, 1)
	require.Equal(t, 2, rep.Intents[0].Pairs.Planned)
	require.False(t, rep.Verdict.Claims(), "2 pairs claim nothing (%s): the run may be topped up", rep.Verdict)

	topped := b.mustRun("top-up", with(map[string]string{"mode": "plan", "pairs": "3", "resume": "true"}))
	assert.Contains(t, topped.Log, "topped up")
	plan := storedPlan(t, b, run)
	require.Len(t, plan.Intents, 1)
	assert.Len(t, plan.Intents[0].Pairs, 3, "the stored plan is topped up")
	assert.Equal(t, []int{2, 3}, plan.Looks)

	second := shards("second", "3")
	for k := range 2 {
		before := attempts(t, runDir(first[k]))
		after := attempts(t, runDir(second[k]))
		require.GreaterOrEqual(t, len(after), len(before))
		assert.Equal(t, before, after[:len(before)], "shard %d: its earlier rows, resumed from the store, as they were", k+1)
		for _, r := range readRows(t, runDir(second[k]))[len(before):] {
			assert.Equal(t, 2, r.Pair, "shard %d ran only the new pair", k+1)
		}
	}
	assert.Greater(t, len(attempts(t, runDir(second[0]))), len(attempts(t, runDir(first[0]))), "shard 1 (pairs 0 and 2) ran the new pair")
	assert.Equal(t, attempts(t, runDir(first[1])), attempts(t, runDir(second[1])), "shard 2 (pair 1) had nothing new")

	agg = b.mustRun("aggregate-again", with(map[string]string{"mode": "merge-and-report"}))
	rep = readReport(t, filepath.Join(agg.Temp, "pairbench-action", "merged", run))
	require.Len(t, rep.Intents, 1)
	assert.Equal(t, 3, rep.Intents[0].Pairs.Planned)
	assert.Equal(t, 3, rep.Intents[0].Pairs.Complete, "the report counts the pairs of both rounds")

	refusedBeforePlanning(t, b, map[string]string{"mode": "plan", "pairs": "3", "resume": "true", "intents": "weather-high-oslo", "total-shards": "2"}, map[string]refusal{
		"resume-no-store":  {map[string]string{"s3-bucket": "", "s3-prefix": "", "s3-endpoint": "", "s3-region": "", "mode": "run", "total-shards": ""}, "input resume needs the artifact store"},
		"resume-no-run-id": {map[string]string{"run-id": ""}, "input resume needs run-id"},
		"resume-merge":     {map[string]string{"mode": "merge-and-report"}, "input resume is for modes run and plan"},
		"resume-bad":       {map[string]string{"resume": "yes"}, "input resume is not valid"},
		"resume-missing":   {nil, "nothing to resume: run gh-resume-missing is not in"},
	})
}

// TestExampleWorkflowResumesATopUp evaluates the example workflow's plan
// job for the inputs the service dispatches: a first bench plans its run
// (resume false), and /bench more's dispatch, the same run id with more
// pairs and top_up, resumes it from the store with those pairs.
func TestExampleWorkflowResumesATopUp(t *testing.T) {
	req := bot.Request{RunID: bot.RunID(fmt.Sprintf("pr%d-%s-0123abcd", prNumber, headSHA)), PR: prNumber, HeadSHA: headSHA,
		Domains: []string{"weather.example"}, Pairs: 10}
	first, err := bot.WorkflowInputs(req)
	require.NoError(t, err)
	assert.Equal(t, "false", exampleJobWith(t, "plan", first)["resume"], "a first bench is planned")

	req.Pairs, req.TopUp = 20, 1
	more, err := bot.WorkflowInputs(req)
	require.NoError(t, err)
	with := exampleJobWith(t, "plan", more)
	assert.Equal(t, "true", with["resume"], "a top-up resumes the stored run")
	assert.Equal(t, string(req.RunID), with["run-id"])
	assert.Equal(t, "20", with["pairs"])
}
