package bench_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/examples/site"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/runner/browser/kernel"
)

const whoamiTool = `({
  name: "whoami",
  description: "The signed-in user.",
  inputSchema: { type: "object", properties: {}, additionalProperties: false },
  annotations: { readOnlyHint: true },
  urlPatterns: ["http://weather.example/*"],
  async execute() {
    const r = await fetch("/api/me");
    if (!r.ok) throw new Error("not signed in (HTTP " + r.status + ")");
    return await r.json();
  }
});
`

// TestBenchSignedInDomainWhoseSessionLapses benches a signed-in domain (a
// profile and a signed_in_check) on Kernel browsers through the fake: the
// smoke gate and every setup of both arms run the check, the first pair is
// scored, and once the session lapses each trial aborts on its first
// browser with the check's reason.
func TestBenchSignedInDomainWhoseSessionLapses(t *testing.T) {
	needRealStack(t)
	reg := t.TempDir()
	require.NoError(t, os.CopyFS(reg, os.DirFS("../examples/registry")))
	domain := filepath.Join(reg, "domains", "weather.example")
	require.NoError(t, os.WriteFile(filepath.Join(domain, "domain.json"),
		[]byte(`{"start_urls": ["http://weather.example/*"], "profile": "ada", "signed_in_check": "whoami"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(domain, "tools", "whoami.js"), []byte(whoamiTool), 0o644))

	var signedIn atomic.Bool
	var checks atomic.Int32
	signedIn.Store(true)
	mux := http.NewServeMux()
	mux.Handle("/", site.New())
	mux.HandleFunc("weather.example/api/me", func(w http.ResponseWriter, r *http.Request) {
		checks.Add(1)
		if !signedIn.Load() {
			http.Error(w, `{"error":"signed out"}`, http.StatusUnauthorized)
			return
		}
		io.WriteString(w, `{"user":"ada"}`)
	})
	fake := fakeKernelServing(t, mux, "ada")

	cfg := config(t, reg)
	cfg.Intents, cfg.Pairs = []string{"weather-high-oslo"}, 2
	cfg.Browser = bench.Browsers{Provider: bench.BrowserKernel, Kernel: kernel.Config{APIKey: fake.Key, BaseURL: fake.URL}}
	var mu sync.Mutex
	var rows []pairbench.Row
	var checksAtFirstTrial int32
	cfg.Hooks = bench.Hooks{
		Start: func(runner.TrialSpec) {
			mu.Lock()
			defer mu.Unlock()
			if checksAtFirstTrial == 0 {
				checksAtFirstTrial = checks.Load()
			}
		},
		Row: func(r pairbench.Row) {
			mu.Lock()
			defer mu.Unlock()
			rows = append(rows, r)
			if len(rows) == 2 {
				signedIn.Store(false) // the session lapses after the first pair
			}
		},
	}
	_, err := bench.Bench(t.Context(), cfg)
	require.NoError(t, err)

	assert.GreaterOrEqual(t, checksAtFirstTrial, int32(1), "the smoke gate ran the check")
	require.GreaterOrEqual(t, len(rows), 4)
	for _, r := range rows[:2] {
		assert.Equal(t, pairbench.Correct, r.Outcome, "%s: %s", r.Arm, r.Reason)
	}
	for _, r := range rows[2:] {
		assert.Equal(t, pairbench.Aborted, r.Outcome, "%s pair %d", r.Arm, r.Pair)
		assert.Contains(t, r.Reason, "signed-in check whoami failed")
		assert.Contains(t, r.Reason, "not signed in (HTTP 401)")
	}
	for _, c := range fake.Creates() {
		require.NotNil(t, c.Profile)
		assert.Equal(t, "ada", c.Profile.Name)
	}
	assert.Empty(t, fake.Live())
}

// TestMissingProfileSkipsTheDomainUnlessNamed plans the example registry
// with weather.example signing in with a profile the fake Kernel does not
// have: the domain is left out of the frozen plan (a problem says so),
// and a run that names it stops before run.json.
func TestMissingProfileSkipsTheDomainUnlessNamed(t *testing.T) {
	needRealStack(t)
	reg := t.TempDir()
	require.NoError(t, os.CopyFS(reg, os.DirFS("../examples/registry")))
	require.NoError(t, os.WriteFile(filepath.Join(reg, "domains", "weather.example", "domain.json"),
		[]byte(`{"start_urls": ["http://weather.example/*"], "profile": "ghost"}`), 0o644))
	fake := fakeKernel(t)

	cfg := config(t, reg)
	cfg.Browser = bench.Browsers{Provider: bench.BrowserKernel, Kernel: kernel.Config{APIKey: fake.Key, BaseURL: fake.URL}}
	cfg.PlanOnly, cfg.Store = true, t.TempDir()
	var problems []runner.Problem
	cfg.Hooks.Problem = func(p runner.Problem) { problems = append(problems, p) }
	res, err := bench.Bench(t.Context(), cfg)
	require.NoError(t, err)
	plan, err := res.Dir.ReadPlan()
	require.NoError(t, err)
	var domains []string
	for _, in := range plan.Intents {
		domains = append(domains, in.Domain)
	}
	assert.NotContains(t, domains, "weather.example")
	assert.Contains(t, domains, "books.example")
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0].Msg, "no profile for its domain")
	assert.Contains(t, problems[0].Attrs, "ghost")

	named := config(t, reg)
	named.Browser, named.Intents = cfg.Browser, []string{"weather-high-oslo"}
	_, err = bench.Bench(t.Context(), named)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `intent weather-high-oslo: the kernel browsers have no profile "ghost", which domain weather.example signs in with`)
	assert.NoFileExists(t, filepath.Join(named.RunsDir, named.RunID, "run.json"))
	assert.Empty(t, fake.Live())
}
