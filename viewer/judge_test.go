package viewer_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/viewer"
)

var judgedCriteria = []rundir.Criterion{{ID: "cheapest", Weight: 2}, {ID: "runner_up", Weight: 1}}

// judgement is a fake run's judgement of a correct trial: treatment names
// the runner-up, control does not; each judged twice.
func judgement(arm pairbench.Arm, hostileText bool) *pairbench.Judgement {
	runnerUp, why := 0.0, "cheapest: named; runner_up: missing."
	if arm == pairbench.Treatment {
		runnerUp, why = 1, "cheapest: named; runner_up: named."
	}
	if hostileText {
		why = hostile
	}
	score := (2 + runnerUp) / 3
	return &pairbench.Judgement{Scores: []pairbench.CriterionScore{{ID: "cheapest", Score: 1}, {ID: "runner_up", Score: runnerUp}},
		Score: score, PassAt: 0.6, Reasoning: why, CostUSD: 0.001,
		Again: &pairbench.Judgement{Scores: []pairbench.CriterionScore{{ID: "cheapest", Score: 1}, {ID: "runner_up", Score: runnerUp}}, Score: score, PassAt: 0.6, Reasoning: why}}
}

// TestSiteShowsTheJudge: a judged intent's pair page shows each arm's
// score, its criteria's scores and the judge's reasoning; its intent page
// and the run page give the score comparison, the criteria's winners and
// the judge's agreement.
func TestSiteShowsTheJudge(t *testing.T) {
	run := fakeRun{intents: 2, pairs: 6, trials: true, judged: true}.write(t, t.TempDir())
	id := "books-intent-001-with-a-long-descriptive-name" // every trial correct, so every trial judged
	pair := readFile(t, run.File(viewer.PairPage(id, 2)))
	assert.Equal(t, 2, strings.Count(pair, "<h3>Judge</h3>"), "both arms")
	for _, want := range []string{
		"score <strong>1.00</strong> (correct at 0.60 or above)",
		"score <strong>0.67</strong> (correct at 0.60 or above)",
		"<tr><td><code>runner_up</code></td><td class=\"num\">0.00</td></tr>",
		"the judge's reasoning:</p><pre>cheapest: named; runner_up: missing.</pre>",
		"judged again (for the judge's agreement; the first judging decides): score 1.00",
	} {
		assert.Contains(t, pair, want)
	}
	intent := readFile(t, run.File(viewer.IntentPage(id)))
	assert.Contains(t, intent, "runner_up (weight 1): control 0.00, treatment 1.00, higher in 0 and 6 pairs, treatment won")
	assert.Contains(t, intent, "12 of 12 answers judged twice got the same verdict (100%)")
	assert.Contains(t, readFile(t, run.File(rundir.ReportHTML)), "answers judged twice got the same verdict")
}

// TestHostileJudgeReasoningIsEscaped: the judge's reasoning is model text
// about a hostile page's content, so it is escaped like the rest.
func TestHostileJudgeReasoningIsEscaped(t *testing.T) {
	run := fakeRun{intents: 2, pairs: 2, trials: true, judged: true, hostile: true}.write(t, t.TempDir())
	for _, rel := range sitePages(t, run) {
		checkInert(t, rel, []byte(readFile(t, run.File(rel))))
	}
}
