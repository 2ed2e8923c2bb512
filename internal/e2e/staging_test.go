//go:build e2e

package e2e

import (
	"net/http"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/examples/site"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/internal/tlstest"
)

// TestBenchAStagingSite benches the example registry, unedited, against a
// staging copy of its site as docs/registry.md tells a team to: an HTTPS
// server of the test's own on loopback, whose CA no system trusts, reached
// by name. --origin points books.example's intents and tools at
// https://staging.test, --host maps that name to localhost:PORT, and
// --ca-cert trusts the CA: both arms score, the treatment with the tools
// registered on the staging origin. Without --ca-cert the smoke gate says
// it is TLS, and how to fix it.
func TestBenchAStagingSite(t *testing.T) {
	tools := clitest.RealStack(t)
	bin := clitest.Build(t)
	ca := tlstest.NewCA(t, "pairbench test staging CA")
	books := site.New()
	staging := ca.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Host = "books.example" // the staging copy of the site
		books.ServeHTTP(w, r)
	}), "staging.test")
	u, err := url.Parse(staging.URL)
	require.NoError(t, err)
	args := func(runs string, more ...string) []string {
		return append([]string{"run", clitest.ExampleRegistry, "--intent", "books-cheapest-by-author", "--pairs", "1",
			"--origin", "books.example=https://staging.test", "--host", "staging.test=localhost:" + u.Port(),
			"--runs-dir", runs, "--run-id", "st1", "--tools", tools, "--start-delay", "0", "--time-cap", "600"}, more...)
	}

	code, _, stderr := runBin(t, bin, args(t.TempDir())...)
	assert.Equal(t, clitest.ExitFailure, code)
	assert.Contains(t, stderr, "start page https://staging.test/ did not load: TLS with staging.test fails: its certificate is signed by an authority this run does not trust; trust its CA for the run with --ca-cert FILE")

	runs := t.TempDir()
	code, _, stderr = runBin(t, bin, args(runs, "--ca-cert", ca.WriteFile(t))...)
	require.Equal(t, clitest.ExitOK, code, stderr)
	rows := clitest.CheckCompleteRun(t, filepath.Join(runs, "st1"))
	for _, r := range rows {
		if r.Attempt == rows[len(rows)-1].Attempt {
			assert.Equal(t, pairbench.Correct, r.Outcome, "%s: %s", r.Arm, r.Reason)
			assert.Positive(t, r.StartupSeconds, "%s: the agent's start-up is recorded", r.Arm)
			assert.Less(t, r.StartupSeconds, r.WallSeconds, "%s: inside the wall time", r.Arm)
			if r.Arm == pairbench.Treatment {
				require.NotEmpty(t, r.WebMCP, "the tools register on the staging origin")
				assert.Equal(t, "find_books", r.WebMCP[0].Tool)
				assert.Equal(t, "ok", r.WebMCP[0].Status)
			}
		}
	}

	rep := clitest.ReadReport(t, filepath.Join(runs, "st1"))
	require.NotNil(t, rep.Intents[0].Speed, "both arms correct")
	require.NotNil(t, rep.Intents[0].Speed.FromFirstRequest, "the speed from the first model request is reported")
	assert.Less(t, rep.Intents[0].Speed.FromFirstRequest.MedianControl, rep.Intents[0].Speed.MedianControl)

	code, _, stderr = runBin(t, bin, "run", clitest.ExampleRegistry, "--intent", "books-cheapest-by-author", "--origin", "book.example=https://staging.test",
		"--runs-dir", t.TempDir(), "--tools", tools)
	assert.Equal(t, clitest.ExitFailure, code)
	assert.Contains(t, stderr, "--origin book.example=https://staging.test: no intent's start_url and no tool's urlPatterns has the origin book.example")
}
