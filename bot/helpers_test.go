package bot_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/state"
	"github.com/pairbench/pairbench/state/statetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	statetest.Stop()
	os.Exit(code)
}

// The repository, pull request and commit of the community example
// payloads in testdata/webhooks.
const (
	repoName   = "Codertocat/Hello-World"
	prNumber   = 2
	headSHA    = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	baseSHA    = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e" // the payloads' pull_request.base.sha
	appID      = 31337
	installID  = 1
	writer     = "maintainer"
	stranger   = "passer-by"
	otherSHA   = "1111111111111111111111111111111111111111"
	defaultRef = "master"
)

// registryFiles is a small registry: books.example has two intents,
// weather.example has none.
var registryFiles = map[string]string{
	".pairbench.yml":                                  "paths:\n  intents: bench/intents\n",
	"domains/books.example/domain.json":               `{"start_urls": ["http://books.example/*"]}`,
	"domains/books.example/tools/find_books.js":       "({name: 'find_books'})",
	"domains/weather.example/domain.json":             `{}`,
	"bench/intents/books.example/books-cheapest.yaml": "id: books-cheapest\ndomain: books.example\n",
	"bench/intents/books.example/books-count.yml":     "id: books-count\ndomain: books.example\n",
	"bench/intents/books.example/README.md":           "not an intent",
	".github/workflows/pairbench.yml":                 "name: pairbench\n",
}

// fakeRunner is the local backend of the tests: each Run waits until the
// test releases it with a verdict (storing the report, as a real bench
// does) or an error, or until its context ends.
type fakeRunner struct {
	f       *fixture
	mu      sync.Mutex
	runs    []bot.Request
	release map[bot.RunID]chan error
}

func (r *fakeRunner) Run(ctx context.Context, req bot.Request, progress func(rundir.Progress)) error {
	r.mu.Lock()
	r.runs = append(r.runs, req)
	ch := r.channel(req.RunID)
	r.mu.Unlock()
	progress(rundir.Progress{Done: 1, Pairs: 4, Planned: 4})
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *fakeRunner) channel(id bot.RunID) chan error {
	if r.release == nil {
		r.release = map[bot.RunID]chan error{}
	}
	ch, ok := r.release[id]
	if !ok {
		ch = make(chan error, 1)
		r.release[id] = ch
	}
	return ch
}

// finish lets run id end with err.
func (r *fakeRunner) finish(id bot.RunID, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.channel(id) <- err
}

func (r *fakeRunner) Runs() []bot.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bot.Request(nil), r.runs...)
}

// testKey is the app's private key, made once: generating one per test
// would take most of the test time.
var testKey = sync.OnceValue(func() *rsa.PrivateKey {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return key
})

// fixture is a bot acting as a GitHub App against a fake GitHub, with its
// state in a real database and its jobs running.
type fixture struct {
	gh      *githubtest.Server
	bot     *bot.Bot
	runner  *fakeRunner
	store   *artifacts.Local
	clients *bot.AppClients
	answers *heldAnswers
	cfg     bot.Config
	n       int // deliveries sent
}

// heldAnswers is the bot's transport to the fake GitHub: it can hold back
// or change the answers to requests the fake has served (their writes took
// effect), as a network or a lagging GitHub would.
type heldAnswers struct {
	base   http.RoundTripper
	mu     sync.Mutex
	answer func(r *http.Request, resp *http.Response, err error) (*http.Response, error)
}

func (h *heldAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	answer := h.answer
	h.mu.Unlock()
	resp, err := h.base.RoundTrip(r)
	if answer == nil {
		return resp, err
	}
	return answer(r, resp, err)
}

// changeAnswers has answer decide what the bot gets for every request,
// given what the fake answered.
func (f *fixture) changeAnswers(answer func(r *http.Request, resp *http.Response, err error) (*http.Response, error)) {
	f.answers.mu.Lock()
	f.answers.answer = answer
	f.answers.mu.Unlock()
}

// holdAnswers holds back the answer to every request match picks until
// the returned release is called (or the test ends).
func (f *fixture) holdAnswers(t *testing.T, match func(*http.Request) bool) (release func()) {
	gate := make(chan struct{})
	release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	f.changeAnswers(func(r *http.Request, resp *http.Response, err error) (*http.Response, error) {
		if match(r) {
			if err := waitGate(r, resp, gate); err != nil {
				return nil, err
			}
		}
		return resp, err
	})
	return release
}

// waitGate waits until gate is closed, or r is abandoned (then resp is
// discarded).
func waitGate(r *http.Request, resp *http.Response, gate chan struct{}) error {
	select {
	case <-gate:
		return nil
	case <-r.Context().Done():
		if resp != nil {
			resp.Body.Close()
		}
		return r.Context().Err()
	}
}

// patience bounds every wait in these tests for something that should
// happen: a hang guard, far beyond what it takes on CI's two cores at a
// load of 50 with the bot's tests running four at a time. A test that
// passes never waits this long; one that proves a timing keeps its own
// short timeouts and reads the times the bot recorded.
const patience = 2 * time.Minute

// waitRuns waits until the local runner has been asked for n runs.
func (f *fixture) waitRuns(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(f.runner.Runs()) == n }, patience, 10*time.Millisecond,
		"the runner was not asked for %d runs", n)
}

// options change a fixture's bot configuration before it opens.
type options func(*bot.Config)

func actions(c *bot.Config) { c.Backend, c.Runner = bot.BackendActions, nil }

func newFixture(t *testing.T, opts ...options) *fixture {
	return newFixtureOn(t, "sqlite", opts...)
}

func newFixtureOn(t *testing.T, dialect string, opts ...options) *fixture {
	t.Helper()
	gh := githubtest.New(t)
	key := testKey()
	gh.AddApp(appID, &key.PublicKey)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	answers := &heldAnswers{base: http.DefaultTransport}
	clients, err := bot.NewAppClients(appID, keyPEM, gh.URL, answers)
	require.NoError(t, err)
	store, err := artifacts.NewLocal(t.TempDir())
	require.NoError(t, err)
	f := &fixture{gh: gh, store: store, clients: clients, answers: answers}
	f.runner = &fakeRunner{f: f}
	f.cfg = bot.Config{Clients: clients, Store: store, Pairs: 20, Backend: bot.BackendLocal, Runner: f.runner,
		State: statetest.Config(t, dialect), PublicURL: "https://bench.example.test", LinkKey: []byte("link-key"),
		ReapEvery: time.Hour, QueuedCheckDelay: -1}
	for _, o := range opts {
		o(&f.cfg)
	}
	gh.Repo(repoName, func(r *githubtest.Repo) {
		r.DefaultBranch = defaultRef
		r.Installation = installID
		r.Files[headSHA] = registryFiles
		r.Files[defaultRef] = registryFiles
		r.Files[otherSHA] = registryFiles
		r.Pulls[prNumber] = &githubtest.Pull{Number: prNumber, HeadSHA: headSHA, HeadRef: "changes", BaseSHA: baseSHA,
			Files: []string{"domains/books.example/tools/find_books.js", "README.md"}}
		r.Permissions[writer] = "write"
		r.Permissions["Codertocat"] = "admin"
	})
	f.start(t)
	return f
}

// start opens the bot on the fixture's state and runs its jobs until the
// test ends (or stop).
func (f *fixture) start(t *testing.T) {
	t.Helper()
	b, err := bot.Open(t.Context(), f.cfg)
	require.NoError(t, err)
	require.NoError(t, b.Start(t.Context()))
	f.bot = b
	t.Cleanup(func() { f.stop(t) })
}

// stop stops the bot's jobs, as a shutdown does, and closes its state.
func (f *fixture) stop(t *testing.T) {
	if f.bot == nil {
		return
	}
	// Jobs still running are cut short after 10 s, as before; waiting for
	// them to end is only bounded by patience.
	soft, cancelSoft := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelSoft()
	hard, cancelHard := context.WithTimeout(context.Background(), patience)
	defer cancelHard()
	assert.NoError(t, f.bot.Stop(soft, hard))
	assert.NoError(t, f.bot.Close())
	f.bot = nil
}

// restart stops the bot and opens it again on the same state.
func (f *fixture) restart(t *testing.T) {
	t.Helper()
	f.stop(t)
	f.start(t)
}

// settle waits until the bot has nothing left to do but run local benches.
func (f *fixture) settle(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		jobs, err := f.bot.State().JobsNotFinished(context.Background())
		require.NoError(t, err)
		delete(jobs, "reap")
		delete(jobs, "local_run")
		return len(jobs) == 0
	}, patience, 10*time.Millisecond, "the bot's jobs did not settle")
}

// payload reads a community example payload and applies edits, each a
// dotted path and its new value.
func payload(t *testing.T, file string, edits map[string]any) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "webhooks", file))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	for path, v := range edits {
		keys := strings.Split(path, ".")
		cur := m
		for _, k := range keys[:len(keys)-1] {
			next, ok := cur[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[k] = next
			}
			cur = next
		}
		cur[keys[len(keys)-1]] = v
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

// deliver stores a delivery, as the server does, and waits for the bot to
// settle.
func (f *fixture) deliver(t *testing.T, event string, body []byte) {
	t.Helper()
	f.accept(t, event, body)
	f.settle(t)
}

// accept stores a delivery, as the server does, and returns its id at
// once.
func (f *fixture) accept(t *testing.T, event string, body []byte) string {
	t.Helper()
	f.n++
	id := fmt.Sprintf("d-%s-%d", event, f.n)
	ok, err := f.bot.Accept(context.Background(), bot.Delivery{ID: id, Event: event, InstallationID: installID, Payload: body})
	require.NoError(t, err)
	require.True(t, ok)
	return id
}

// waitHandled waits until the bot has handled delivery id.
func (f *fixture) waitHandled(t *testing.T, id string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var d state.Delivery
		require.NoError(t, f.bot.State().View(context.Background(), func(tx *state.Tx) (err error) {
			d, err = tx.Delivery(context.Background(), installID, id)
			return err
		}))
		return d.Handled
	}, patience, 10*time.Millisecond, "delivery %s was never handled", id)
}

// comment delivers an issue_comment on the pull request.
func (f *fixture) comment(t *testing.T, user, body string) {
	t.Helper()
	f.deliver(t, "issue_comment", commentPayload(t, user, body, time.Now()))
}

// commentIDs numbers the comments of commentPayload: GitHub gives every
// comment its own id, and the bot carries out each comment's command once.
var commentIDs atomic.Int64

func commentPayload(t *testing.T, user, body string, at time.Time) []byte {
	return payload(t, "issue_comment.created.json", map[string]any{
		"comment.id":         5000 + commentIDs.Add(1),
		"issue.number":       prNumber,
		"issue.pull_request": map[string]any{"url": "https://api.github.com/repos/" + repoName + "/pulls/2"},
		"comment.body":       body,
		"comment.user.login": user,
		"comment.user.type":  "User",
		"comment.created_at": at.UTC().Format(time.RFC3339),
	})
}

// opened delivers pull_request opened for the head commit.
func (f *fixture) opened(t *testing.T, edits map[string]any) {
	t.Helper()
	f.deliver(t, "pull_request", payload(t, "pull_request.opened.json", edits))
}

// push moves the pull request's head to sha on the fake and delivers
// synchronize.
func (f *fixture) push(t *testing.T, sha string, edits map[string]any) {
	t.Helper()
	f.gh.Repo(repoName, func(r *githubtest.Repo) { r.Pulls[prNumber].HeadSHA = sha })
	e := map[string]any{"pull_request.head.sha": sha, "pull_request.updated_at": time.Now().UTC().Format(time.RFC3339)}
	for k, v := range edits {
		e[k] = v
	}
	f.deliver(t, "pull_request", payload(t, "pull_request.synchronize.json", e))
}

// benches returns the bot's records of the pull request, newest first.
func (f *fixture) benches(t *testing.T) []state.Bench {
	t.Helper()
	var out []state.Bench
	require.NoError(t, f.bot.State().View(context.Background(), func(tx *state.Tx) (err error) {
		out, err = tx.BenchesOfPull(context.Background(), repoName, prNumber)
		return err
	}))
	return out
}

// finishLocal ends local run id with verdict (storing its report) and
// waits for the bot to post it.
func (f *fixture) finishLocal(t *testing.T, id string, verdict pairbench.Label) {
	t.Helper()
	f.storeReport(t, bot.RunID(id), verdict)
	f.runner.finish(bot.RunID(id), nil)
	f.waitBench(t, id, state.BenchDone)
}

// waitBench waits until run id is in state and the bot settled.
func (f *fixture) waitBench(t *testing.T, id, want string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, b := range f.benches(t) {
			if b.Run == id {
				return b.State == want
			}
		}
		return false
	}, patience, 10*time.Millisecond, "run %s never became %s", id, want)
	f.settle(t)
}

// completeWorkflow completes the Actions run the bot dispatched for run
// id, as GitHub would, and delivers its workflow_run event.
func (f *fixture) completeWorkflow(t *testing.T, id, conclusion string) {
	t.Helper()
	var wf int64
	for _, b := range f.benches(t) {
		if b.Run == id {
			wf = b.WorkflowRunID
		}
	}
	require.NotZero(t, wf, "run %s has no workflow run", id)
	f.gh.CompleteWorkflowRun(repoName, wf, conclusion)
	named := id
	if run, ok := f.gh.WorkflowRun(repoName, wf); ok { // a top-up's is "<run id>+<n>"
		named = strings.TrimPrefix(run.DisplayTitle, "pairbench ")
	}
	f.deliver(t, "workflow_run", workflowRunPayload(t, wf, named, conclusion))
}

// storeReport stores report.json (the demo report with the given verdict)
// and report.html for run id.
func (f *fixture) storeReport(t *testing.T, id bot.RunID, verdict pairbench.Label) {
	t.Helper()
	rep := readReport(t)
	rep.Verdict = verdict
	rep.RunID = string(id)
	data, err := json.Marshal(rep)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, f.store.Put(ctx, string(id)+"/report.json", bytes.NewReader(data)))
	require.NoError(t, f.store.Put(ctx, string(id)+"/report.html", strings.NewReader("<html></html>")))
}

func readReport(t *testing.T) *report.Report {
	t.Helper()
	fh, err := os.Open(filepath.Join("testdata", "report.json"))
	require.NoError(t, err)
	defer fh.Close()
	rep, err := report.ReadJSON(fh)
	require.NoError(t, err)
	return rep
}

var errBoom = errors.New("boom")

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return data
}

// withEdits applies edits (dotted paths) to a JSON payload.
func withEdits(t *testing.T, body []byte, edits map[string]any) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	for path, v := range edits {
		keys := strings.Split(path, ".")
		cur := m
		for _, k := range keys[:len(keys)-1] {
			next, ok := cur[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[k] = next
			}
			cur = next
		}
		cur[keys[len(keys)-1]] = v
	}
	return mustJSON(t, m)
}
