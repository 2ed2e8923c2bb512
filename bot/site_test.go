package bot_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/artifacts/s3test"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/server"
	"github.com/pairbench/pairbench/state"
	"github.com/pairbench/pairbench/viewer"
)

// writeSite writes a small run, one intent of one pair with its trial
// directories and screenshots, reports it as pairbench report does (the
// run page, the intent page, the pair page) and puts every file in store
// under the run id.
func writeSite(t *testing.T, store artifacts.Store, runID string) {
	t.Helper()
	run := rundir.RunDir{Path: t.TempDir()}
	plan := &rundir.Plan{
		V: rundir.PlanVersion, RunID: runID, CreatedAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC),
		Versions: rundir.Versions{Pairbench: "test", AgentName: "pi", Agent: "1.6.0"},
		Model:    rundir.Model{Provider: "pairbench", ID: "pairbench-scripted", Scripted: true},
		Caps:     rundir.PlanCaps{TimeS: 120, Turns: 30}, Seed: 7, Alpha: 0.05,
	}
	in := rundir.PlannedIntent{ID: "books-cheapest", Domain: "books.example", Class: pairbench.AnswerPinned, Tools: []string{"find_books"},
		Pairs: []rundir.PlannedPair{{Pair: 0, Order: pairbench.AB}}}
	plan.Intents = []rundir.PlannedIntent{in}
	var shot bytes.Buffer
	require.NoError(t, png.Encode(&shot, image.NewRGBA(image.Rect(0, 0, 8, 5))))
	var rows []byte
	for _, arm := range []pairbench.Arm{pairbench.Control, pairbench.Treatment} {
		job := rundir.Job{Intent: in.ID, Stage: pairbench.StagePair, Pair: 0, Order: pairbench.AB, Attempt: 1}
		r := pairbench.Row{V: pairbench.RowVersion, RunID: runID, Intent: in.ID, Domain: in.Domain, Stage: pairbench.StagePair,
			Order: pairbench.AB, Arm: arm, Attempt: 1, Outcome: pairbench.Correct, WallSeconds: 30, Turns: 4,
			Answer:   pairbench.Answer{Raw: `{"title": "Paper Boats"}`, Extracted: map[string]any{"title": "Paper Boats"}},
			TrialDir: rundir.TrialDir(job, arm)}
		require.NoError(t, os.MkdirAll(run.File(r.TrialDir), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(run.File(r.TrialDir), "screenshot.png"), shot.Bytes(), 0o644))
		var err error
		rows, err = pairbench.AppendRow(rows, r)
		require.NoError(t, err)
	}
	require.NoError(t, run.WritePlan(plan))
	require.NoError(t, run.WriteFile(rundir.RowsFile, rows))
	rep, err := bench.WriteReport(run, run, "")
	require.NoError(t, err)
	assert.Empty(t, rep.Warnings, "rows")
	require.NoError(t, fs.WalkDir(os.DirFS(run.Path), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(run.File(p))
		if err != nil {
			return err
		}
		return store.Put(t.Context(), rundir.StoreKey(runID, p), bytes.NewReader(b))
	}))
}

// site follows a run's report link through the service's handler.
type site struct {
	t *testing.T
	h http.Handler
}

// get asks for u (a URL of the service) and returns the answer.
func (s site) get(u *url.URL) *http.Response {
	w := httptest.NewRecorder()
	s.h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, u.RequestURI(), nil))
	return w.Result()
}

// follow finds the first link of page (at u) that matches pattern, resolves
// it against u as a browser would, and returns the URL.
func (s site) follow(u *url.URL, page, pattern string) *url.URL {
	s.t.Helper()
	m := regexp.MustCompile(`(?:href|src)="(` + pattern + `)"`).FindStringSubmatch(page)
	require.NotNil(s.t, m, "a link matching %s on %s", pattern, u)
	ref, err := url.Parse(m[1])
	require.NoError(s.t, err)
	return u.ResolveReference(ref)
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// TestReportSitesBehindTheService follows a comment's report link on a
// directory store and on a real S3 server: the run page, a relative link to
// its intent page, from there to the pair page with both arms, and to a
// trial's screenshot, each streamed from the store with the viewer's
// headers; nothing outside the run's site is served, and a signature opens
// its own run only.
func TestReportSitesBehindTheService(t *testing.T) {
	t.Parallel()
	bin, err := filepath.Abs("../tools/bin/versitygw")
	require.NoError(t, err)
	const access, secret = "pairbench-test", "pairbench-test-secret-0123456789"
	srv := s3test.StartT(t, bin, access, secret, "runs")
	s3, err := artifacts.NewS3(t.Context(), artifacts.S3Config{Endpoint: srv.Endpoint, Bucket: "runs", Region: s3test.Region,
		PathStyle: true, AccessKeyID: access, SecretAccessKey: secret})
	require.NoError(t, err)
	dir, err := artifacts.NewLocal(t.TempDir())
	require.NoError(t, err)

	for name, store := range map[string]artifacts.Store{"directory": dir, "s3": s3} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, func(c *bot.Config) { c.Store = store })
			f.opened(t, nil)
			run := f.benches(t)[0].Run
			writeSite(t, store, run)
			f.runner.finish(bot.RunID(run), nil)
			f.waitBench(t, run, state.BenchDone)

			comment := f.gh.Comments(repoName, prNumber)[0].Body
			assert.NotContains(t, comment, "X-Amz-", "no presigned URL in a public comment")
			m := regexp.MustCompile(`https://bench\.example\.test/runs/[^)> \n]+`).FindString(comment)
			require.NotEmpty(t, m, comment)
			link, err := url.Parse(m)
			require.NoError(t, err)
			require.True(t, strings.HasSuffix(link.Path, "/report.html"), link)
			// The routes of pairbench serve in front of the handler.
			srv, err := server.New(server.Config{Secret: []byte("s"), Reports: f.bot.ReportHandler(),
				Inbox: server.InboxFunc(func(context.Context, server.Delivery) (bool, error) { return false, nil })})
			require.NoError(t, err)
			s := site{t: t, h: srv.Handler()}

			resp := s.get(link)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			want, _ := viewer.Headers(rundir.ReportHTML)
			assert.Equal(t, want.Get("Content-Security-Policy"), resp.Header.Get("Content-Security-Policy"))
			assert.Equal(t, "no-referrer", resp.Header.Get("Referrer-Policy"), "the signature in the path never leaves in a Referer")
			runPage := body(t, resp)
			assert.Contains(t, runPage, "books-cheapest")

			intent := s.follow(link, runPage, `intents/[^"]+\.html`)
			resp = s.get(intent)
			require.Equal(t, http.StatusOK, resp.StatusCode, intent.String())
			assert.Equal(t, viewer.Policy+"; frame-ancestors 'none'", resp.Header.Get("Content-Security-Policy"))
			intentPage := body(t, resp)
			back := s.follow(intent, intentPage, `[^"]*report\.html`)
			assert.Equal(t, link.Path, back.Path, "the intent page's link back leads to the run page")

			pair := s.follow(intent, intentPage, `[^"]*books-cheapest/[^"]+\.html`)
			resp = s.get(pair)
			require.Equal(t, http.StatusOK, resp.StatusCode, pair.String())
			pairPage := body(t, resp)
			assert.Contains(t, pairPage, "treatment")

			shotURL := s.follow(pair, pairPage, `[^"]*trials/[^"]+screenshot\.png`)
			resp = s.get(shotURL)
			require.Equal(t, http.StatusOK, resp.StatusCode, shotURL.String())
			assert.Equal(t, "image/png", resp.Header.Get("Content-Type"))
			assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "sandbox")
			_, err = png.Decode(resp.Body)
			assert.NoError(t, err, "the screenshot itself")

			// Only the site of the signed run.
			base := strings.TrimSuffix(link.Path, "report.html")
			for _, p := range []string{base + "run.json", base + "rows.jsonl", base + "report.json", base + "trials/",
				base + "../" + "report.html", base + "intents/../report.html", base + "%2e%2e/x/report.html", base + "intents//x.html"} {
				u, err := url.Parse("https://bench.example.test" + p)
				require.NoError(t, err, p)
				code := s.get(u).StatusCode
				assert.Contains(t, []int{http.StatusNotFound, http.StatusForbidden}, code, "%s: %d", p, code)
			}
			other := strings.Replace(link.Path, run, "pr2-"+headSHA+"-00000000", 1)
			assert.Equal(t, http.StatusForbidden, s.get(&url.URL{Path: other}).StatusCode, "a signature is good for its run only")
			forged := strings.Replace(link.Path, "/report.html", "", 1)
			forged = forged[:strings.LastIndex(forged, "/")+1] + strings.Repeat("0", 32) + "/report.html"
			assert.Equal(t, http.StatusForbidden, s.get(&url.URL{Path: forged}).StatusCode)
			post := httptest.NewRecorder()
			s.h.ServeHTTP(post, httptest.NewRequest(http.MethodPost, link.Path, nil))
			assert.Contains(t, []int{http.StatusMethodNotAllowed, http.StatusNotFound}, post.Code, "read only")

			// A link of the earlier form leads to the site.
			old := &url.URL{Path: "/runs/" + run + "/report", RawQuery: "sig=" + strings.Split(strings.TrimPrefix(link.Path, "/runs/"+run+"/"), "/")[0]}
			resp = s.get(old)
			require.Equal(t, http.StatusFound, resp.StatusCode)
			assert.Equal(t, link.Path, resp.Header.Get("Location"))
		})
	}
}
