package bot_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/state"
)

// TestAPullRequestIsBenchedAgainstItsBase: a pull request that edits an
// existing domain's tool (the fixture's domains/books.example/tools/
// find_books.js) is benched against its base's tools, not against no
// tools: the base commit of the pull_request payload reaches the local
// backend's bench and the Actions dispatch's base input, from the event and
// from /bench run alike, named intents included (each domain as its changes
// choose); /bench run --against none carries none.
func TestAPullRequestIsBenchedAgainstItsBase(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, nil)
	bn := f.benches(t)[0]
	assert.Equal(t, baseSHA, bn.Base, "the payload's base commit is recorded with the bench")
	require.Eventually(t, func() bool { return len(f.runner.Runs()) == 1 }, 10*time.Second, 10*time.Millisecond)
	got := f.runner.Runs()[0]
	assert.Equal(t, baseSHA, got.Base, "the local backend benches against the base")
	assert.Equal(t, []string{"books.example"}, got.Domains)
	assert.Empty(t, got.Intents, "the diff chooses each domain's comparison")

	f.comment(t, writer, "/bench run")
	assert.Equal(t, baseSHA, f.benches(t)[0].Base, "/bench run reads the base of the pull request GitHub has now")
	f.comment(t, writer, "/bench run books-count")
	bn = f.benches(t)[0]
	assert.Equal(t, baseSHA, bn.Base, "named intents are benched as the pull request's changes choose")
	assert.Equal(t, []string{"books-count"}, bn.Intents)
	f.comment(t, writer, "/bench run --against none books-count")
	bn = f.benches(t)[0]
	assert.Empty(t, bn.Base, "--against none: against no tools, whatever changed")
	assert.Equal(t, []string{"books-count"}, bn.Intents)
	f.comment(t, writer, "/bench run --against none")
	bn = f.benches(t)[0]
	assert.Empty(t, bn.Base)
	assert.Equal(t, []string{"books.example"}, bn.Domains, "the changed domains, against no tools")
	replies := f.gh.Comments(repoName, prNumber)
	assert.Contains(t, replies[len(replies)-1].Body, "against no tools")

	a := newFixture(t, actions)
	a.opened(t, nil)
	ds := a.gh.Dispatches(repoName)
	require.Len(t, ds, 1)
	assert.Equal(t, baseSHA, ds[0].Inputs["base"], "the Action benches the pull request's changes since base")
	a.comment(t, writer, "/bench run books-count")
	ds = a.gh.Dispatches(repoName)
	require.Len(t, ds, 2)
	assert.Equal(t, baseSHA, ds[1].Inputs["base"], "named intents: the base, for the Action to choose each domain's comparison")
	assert.Equal(t, "books-count", ds[1].Inputs["intents"])
	a.comment(t, writer, "/bench run --against none books-count")
	ds = a.gh.Dispatches(repoName)
	require.Len(t, ds, 3)
	assert.Nil(t, ds[2].Inputs["base"], "--against none: no base input")
}

// TestAWorkflowWithoutABaseInputStillBenches: a workflow written before
// the base input (GitHub refuses a dispatch with an input it does not
// declare) is dispatched again without it, and benches as it did.
func TestAWorkflowWithoutABaseInputStillBenches(t *testing.T) {
	t.Parallel()
	a := newFixture(t, actions)
	a.gh.Repo(repoName, func(r *githubtest.Repo) {
		r.WorkflowInputs = map[string][]string{"pairbench.yml": {"run_id", "pr", "head_sha", "domains", "intents", "pairs", "model", "agent"}}
	})
	a.opened(t, nil)
	ds := a.gh.Dispatches(repoName)
	require.Len(t, ds, 1, "one dispatch GitHub took")
	assert.Nil(t, ds[0].Inputs["base"])
	assert.Equal(t, "books.example", ds[0].Inputs["domains"])
	bn := a.benches(t)[0]
	assert.Equal(t, state.BenchRunning, bn.State, "the bench runs")
	assert.NotZero(t, bn.WorkflowRunID)
}

// TestTheCheckRunNamesTheArms: a bench of head against base has its check
// run's title name both arms by what they are, as the report does, and the
// domains benched against no tools beside the others.
func TestTheCheckRunNamesTheArms(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, nil)
	bn := f.benches(t)[0]
	rep := reportAgainstBase(t, bn.Run, pairbench.Faster)
	rep.Arms.Domains = []report.DomainArms{{Domain: "books.example", Edited: []string{"find_books"}}, {Domain: "weather.example", AgainstNone: true}}
	f.finishWith(t, rep)
	runs := f.gh.CheckRuns(repoName)
	require.Len(t, runs, 1)
	assert.Equal(t, "bench: faster · this PR's tools (ec26c3e) against master@f95f852's tools (books.example), no tools (weather.example)", runs[0].Title)

	rep.Arms.Domains = rep.Arms.Domains[:1]
	for i := range rep.Intents {
		rep.Intents[i].Domain = "books.example"
	}
	f.comment(t, writer, "/bench run")
	bn = f.benches(t)[0]
	rep.RunID = bn.Run
	f.finishWith(t, rep)
	for _, cr := range f.gh.CheckRuns(repoName) {
		if cr.ExternalID == bn.Run {
			assert.Equal(t, "bench: faster · this PR's tools (ec26c3e) against master@f95f852's tools", cr.Title)
		}
	}
}

// TestBothComparisonsAreShown: a bench whose registry asks for compare:
// both leaves a second run, <run id>-none, of the same domains against no
// tools (the bench runs it; service's local backend and the Action alike).
// The check run and the sticky comment show both results, each named by
// its arms, and the first decides the conclusion and the label.
func TestBothComparisonsAreShown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, nil)
	bn := f.benches(t)[0]
	rep := reportAgainstBase(t, bn.Run, pairbench.Slower)
	f.storeReport(t, bot.RunID(bn.Run+"-none"), pairbench.Faster)
	f.finishWith(t, rep)

	runs := f.gh.CheckRuns(repoName)
	require.Len(t, runs, 1)
	assert.Equal(t, "failure", runs[0].Conclusion, "the comparison against base decides")
	assert.Contains(t, runs[0].Title, "against master@f95f852's tools")
	assert.Contains(t, runs[0].Summary, "**Also this PR's tools (ec26c3e) against no tools: faster** (run `"+bn.Run+"-none`)")
	assert.Contains(t, runs[0].Text, "**Also this PR's tools (ec26c3e) against no tools: faster**")
	var sticky string
	for _, c := range f.gh.Comments(repoName, prNumber) {
		if strings.Contains(c.Body, "pairbench:rollup") {
			sticky = c.Body
		}
	}
	assert.Contains(t, sticky, "f95f852's tools (control", "the first comparison, named by its arms")
	assert.Contains(t, sticky, "**Also this PR's tools (ec26c3e) against no tools** (run `"+bn.Run+"-none`)")
	assert.Equal(t, []string{"bench: slower"}, f.gh.IssueLabels(repoName, prNumber))

	// The second run's report site is served behind its own signed link.
	second := bn.Run + "-none"
	i := strings.Index(sticky, "https://bench.example.test/runs/"+second+"/")
	require.Positive(t, i, "the comment links the second run's report")
	link := sticky[i:]
	link = link[:strings.IndexAny(link, ")> \n")]
	w := httptest.NewRecorder()
	f.bot.ReportHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, strings.TrimPrefix(link, "https://bench.example.test"), nil))
	assert.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, "<html></html>", w.Body.String())
	w = httptest.NewRecorder()
	f.bot.ReportHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet,
		strings.Replace(strings.TrimPrefix(link, "https://bench.example.test"), second, "pr2-"+headSHA+"-00000000-none", 1), nil))
	assert.Equal(t, http.StatusForbidden, w.Code, "a signature is good for its run only")
}

// reportAgainstBase is the test report as a bench of run with the given
// verdict, of the pull request's tools against its base's.
func reportAgainstBase(t *testing.T, run string, verdict pairbench.Label) *report.Report {
	rep := readReport(t)
	rep.RunID, rep.Verdict = run, verdict
	rep.Arms = &report.Arms{
		Control:   report.ArmName{Spec: "tools@" + baseSHA, Name: "master@f95f852's tools", Tools: true},
		Treatment: report.ArmName{Spec: "tools", Name: "this PR's tools (ec26c3e)", Tools: true},
	}
	return rep
}
