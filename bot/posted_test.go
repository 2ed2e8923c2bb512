package bot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/intents/config"
)

// Credentials an operator's --git-url or a failing tool may carry: a GitHub
// installation token in the URL's user information, and token shapes the
// bot's own patterns did not know (GitLab, Slack, Hugging Face).
const (
	tokenURL    = "https://x-access-token:ghs_Qw3rTy0123456789abcdefghijKLMNOP@github.example/o/registry.git"
	gitlabToken = "glpat-Zx9Yw8Vu7Ts6Rq5Po4Nm"
	slackToken  = "xoxb-123456789012-abcdefghijklmnop"
	hfToken     = "hf_AbCdEfGhIjKlMnOpQrStUv0123456789"
)

var leaks = []string{"ghs_Qw3rTy0123456789", gitlabToken, slackToken, hfToken}

// assertNothingPosted fails if any write the fake received carries one of
// the credentials.
func assertNothingPosted(t *testing.T, gh *githubtest.Server) {
	t.Helper()
	writes := 0
	for _, c := range gh.Calls() {
		if c.Method == http.MethodGet {
			continue
		}
		writes++
		for _, leak := range leaks {
			assert.NotContains(t, string(c.Body), leak, "%s posted a credential", c)
		}
	}
	require.NotZero(t, writes)
}

// storeReportFrom stores run id's report, its registry read from source.
func (f *fixture) storeReportFrom(t *testing.T, id string, verdict pairbench.Label, source string) {
	t.Helper()
	rep := readReport(t)
	rep.Verdict, rep.RunID, rep.Source = verdict, id, source
	data, err := json.Marshal(rep)
	require.NoError(t, err)
	require.NoError(t, f.store.Put(context.Background(), id+"/report.json", bytes.NewReader(data)))
}

// TestNothingPostedCarriesACredential: a local bench whose report names its
// registry by a --git-url with a token, then one that fails quoting tokens
// of other shapes. Neither the check runs, the rollup comment nor the
// replies carry one, yet the report is posted.
func TestNothingPostedCarriesACredential(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, nil)
	bn := f.benches(t)[0]
	f.storeReportFrom(t, bn.Run, pairbench.Better, tokenURL+" at "+headSHA)
	f.runner.finish(bot.RunID(bn.Run), nil)
	f.waitBench(t, bn.Run, "done")
	comments := f.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].Body, "registry https://***@", "the source is shown, its credential not")

	f.comment(t, writer, "/bench run")
	run := f.benches(t)[0].Run
	f.waitRuns(t, 2)
	f.runner.finish(bot.RunID(run), fmt.Errorf("clone %s: token %s rejected; notify %s; model %s", tokenURL, gitlabToken, slackToken, hfToken))
	f.waitBench(t, run, "failed")
	assert.Contains(t, f.gh.CheckRuns(repoName)[1].Summary, "token *** rejected")
	assertNothingPosted(t, f.gh)
}

// TestPostRedactsAReportsSource: the Actions path (`pairbench post`, a
// plain token) posts a report.json whose source carries a token, and a
// failure quoting one.
func TestPostRedactsAReportsSource(t *testing.T) {
	t.Parallel()
	gh, c := actionClient(t)
	ctx := context.Background()
	target := bot.Target{Owner: "Codertocat", Repo: "Hello-World", PR: prNumber, SHA: sha(1)}
	v := verdict(t, pairbench.Better, "https://example.test/r1")
	v.Report.Source = tokenURL
	require.NoError(t, bot.PostVerdict(ctx, c, target, v))
	target.SHA = sha(2)
	require.NoError(t, bot.PostFailure(ctx, c, target, "run-2", "fetch "+tokenURL+" with "+gitlabToken+": denied"))
	body := gh.Comments(repoName, prNumber)[0].Body
	assert.Contains(t, body, "github.example")
	assert.True(t, strings.Contains(body, "denied"), body)
	assertNothingPosted(t, gh)
}

// TestRegistryProblemsAreAList: a local bench fails on a registry with
// problems. The comment and the check run list them one per line, each
// at its file and line, without advice to re-run (the same commit has the
// same problems). They used to run on as one paragraph, with that advice.
func TestRegistryProblemsAreAList(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, nil)
	run := f.benches(t)[0].Run
	ps := config.Problems{
		{Pos: intents.Pos{File: "bench/intents/books.example/books-count.yml", Line: 3}, Msg: `unknown field "colour"`},
		{Pos: intents.Pos{File: "domains/books.example/domain.json", Line: 1}, Msg: "start_urls: want a list"},
	}
	f.runner.finish(bot.RunID(run), fmt.Errorf("the registry at commit %s has 2 problem(s): %w", headSHA, ps))
	f.waitBench(t, run, "failed")
	comments := f.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 1)
	body := comments[0].Body
	assert.Contains(t, body, "> The registry at this commit has 2 problem(s)")
	assert.Contains(t, body, "\n> - `bench/intents/books.example/books-count.yml:3`: unknown field \"colour\"\n")
	assert.Contains(t, body, "\n> - `domains/books.example/domain.json:1`: start_urls: want a list")
	assert.NotContains(t, body, "try again")
	summary := f.gh.CheckRuns(repoName)[0].Summary
	assert.Contains(t, summary, "\n- `bench/intents/books.example/books-count.yml:3`: unknown field \"colour\"\n")
}
