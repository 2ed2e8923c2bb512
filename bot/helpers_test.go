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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/stats"
)

// The repository, pull request and commit of the community example
// payloads in testdata/webhooks.
const (
	repoName   = "Codertocat/Hello-World"
	prNumber   = 2
	headSHA    = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
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

// recordingDispatcher records what the bot dispatches and cancels; it runs
// nothing. Err, if set, fails every Dispatch.
type recordingDispatcher struct {
	mu         sync.Mutex
	dispatched []bot.Request
	cancelled  []bot.Request
	err        error
}

var _ bot.Dispatcher = (*recordingDispatcher)(nil)

func (d *recordingDispatcher) Dispatch(_ context.Context, req bot.Request) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	d.dispatched = append(d.dispatched, req)
	return nil
}

func (d *recordingDispatcher) Cancel(_ context.Context, req bot.Request) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cancelled = append(d.cancelled, req)
	return nil
}

func (d *recordingDispatcher) Dispatched() []bot.Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]bot.Request(nil), d.dispatched...)
}

func (d *recordingDispatcher) Cancelled() []bot.Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]bot.Request(nil), d.cancelled...)
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
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

// fixture is a bot acting as a GitHub App against a fake GitHub.
type fixture struct {
	gh      *githubtest.Server
	bot     *bot.Bot
	disp    *recordingDispatcher
	store   *artifacts.Local
	clock   *clock
	clients *bot.AppClients
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	gh := githubtest.New(t)
	key := testKey()
	gh.AddApp(appID, &key.PublicKey)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	clients, err := bot.NewAppClients(appID, keyPEM, gh.URL, nil)
	require.NoError(t, err)
	store, err := artifacts.NewLocal(t.TempDir())
	require.NoError(t, err)
	f := &fixture{gh: gh, disp: &recordingDispatcher{}, store: store, clients: clients, clock: &clock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}}
	f.bot, err = bot.New(bot.Config{Clients: clients, Dispatcher: f.disp, Store: store, Now: f.clock.Now, Pairs: 20})
	require.NoError(t, err)
	gh.Repo(repoName, func(r *githubtest.Repo) {
		r.DefaultBranch = defaultRef
		r.Installation = installID
		r.Files[headSHA] = registryFiles
		r.Files[defaultRef] = registryFiles
		r.Pulls[prNumber] = &githubtest.Pull{Number: prNumber, HeadSHA: headSHA, HeadRef: "changes",
			Files: []string{"domains/books.example/tools/find_books.js", "README.md"}}
		r.Permissions[writer] = "write"
		r.Permissions["Codertocat"] = "admin"
	})
	return f
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

func (f *fixture) deliver(t *testing.T, event string, body []byte) error {
	t.Helper()
	return f.bot.Handle(context.Background(), bot.Delivery{ID: "d-" + event, Event: event, InstallationID: installID, Payload: body})
}

// comment delivers an issue_comment on the pull request.
func (f *fixture) comment(t *testing.T, user, body string) error {
	t.Helper()
	return f.deliver(t, "issue_comment", payload(t, "issue_comment.created.json", map[string]any{
		"issue.number":       prNumber,
		"issue.pull_request": map[string]any{"url": "https://api.github.com/repos/" + repoName + "/pulls/2"},
		"comment.body":       body,
		"comment.user.login": user,
		"comment.user.type":  "User",
	}))
}

// opened delivers pull_request opened for the head commit.
func (f *fixture) opened(t *testing.T, edits map[string]any) error {
	t.Helper()
	return f.deliver(t, "pull_request", payload(t, "pull_request.opened.json", edits))
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

func readReport(t *testing.T) *stats.Report {
	t.Helper()
	fh, err := os.Open(filepath.Join("testdata", "report.json"))
	require.NoError(t, err)
	defer fh.Close()
	rep, err := stats.ReadJSON(fh)
	require.NoError(t, err)
	return rep
}

// operations lists the operationIds of the calls made, in order, leaving
// out the token requests.
func (f *fixture) operations() []string {
	var out []string
	for _, c := range f.gh.Calls() {
		if c.Operation != "apps/create-installation-access-token" {
			out = append(out, c.Operation)
		}
	}
	return out
}

var errBoom = errors.New("boom")

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return data
}
