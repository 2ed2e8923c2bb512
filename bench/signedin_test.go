package bench_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/browser/kernel"
	"github.com/pairbench/pairbench/examples/site"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/runner"
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
//
// The session lapses once the first pair is scored in both arms, not after
// a count of rows: on a busy machine an attempt may abort for a reason of
// its own (a slow start, say) and its pair runs again, and a lapse after
// those rows would leave no pair to score.
func TestBenchSignedInDomainWhoseSessionLapses(t *testing.T) {
	realstack.Need(t)
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

	cfg := benchConfig(t, reg)
	cfg.Intents, cfg.Pairs = []string{"weather-high-oslo"}, 2
	cfg.Browser = bench.Browsers{Provider: bench.BrowserKernel, Kernel: kernel.Config{APIKey: fake.Key, BaseURL: fake.URL}}
	var mu sync.Mutex
	var before, after []pairbench.Row // the rows before and after the lapse
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
			if !signedIn.Load() {
				after = append(after, r)
				return
			}
			before = append(before, r)
			if len(scoredArms(before)) == 1 {
				signedIn.Store(false) // the session lapses after the first scored pair
			}
		},
	}
	_, err := bench.Bench(t.Context(), cfg)
	require.NoError(t, err)

	assert.GreaterOrEqual(t, checksAtFirstTrial, int32(1), "the smoke gate ran the check")
	scored := scoredArms(before)
	require.Len(t, scored, 1, "a pair was scored while signed in: %v", reasons(before))
	for _, r := range scored {
		for _, row := range r {
			assert.Equal(t, pairbench.Correct, row.Outcome, "%s: %s", row.Arm, row.Reason)
		}
	}
	for _, r := range before {
		if r.Outcome == pairbench.Aborted {
			assert.NotContains(t, r.Reason, "signed-in check", "no check failed while the session held")
		}
	}
	require.GreaterOrEqual(t, len(after), 2, "the other pair ran after the lapse")
	for _, r := range after {
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

// scoredArms gives the pairs of rows scored in both arms of one attempt,
// by pair and attempt.
func scoredArms(rows []pairbench.Row) map[[2]int][]pairbench.Row {
	by := map[[2]int][]pairbench.Row{}
	for _, r := range rows {
		if r.Outcome.Scored() {
			k := [2]int{r.Pair, r.Attempt}
			by[k] = append(by[k], r)
		}
	}
	for k, rs := range by {
		if len(rs) < 2 {
			delete(by, k)
		}
	}
	return by
}

// reasons lists rows as "pair/attempt arm outcome: reason".
func reasons(rows []pairbench.Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%d/%d %s %s: %s", r.Pair, r.Attempt, r.Arm, r.Outcome, r.Reason))
	}
	return out
}

// TestMissingProfileSkipsTheDomainUnlessNamed plans the example registry
// with weather.example signing in with a profile the fake Kernel does not
// have: the domain is left out of the frozen plan (a problem says so),
// and a run that names it stops before run.json.
func TestMissingProfileSkipsTheDomainUnlessNamed(t *testing.T) {
	realstack.Need(t)
	reg := t.TempDir()
	require.NoError(t, os.CopyFS(reg, os.DirFS("../examples/registry")))
	require.NoError(t, os.WriteFile(filepath.Join(reg, "domains", "weather.example", "domain.json"),
		[]byte(`{"start_urls": ["http://weather.example/*"], "profile": "ghost"}`), 0o644))
	fake := fakeKernel(t)

	cfg := benchConfig(t, reg)
	cfg.Browser = bench.Browsers{Provider: bench.BrowserKernel, Kernel: kernel.Config{APIKey: fake.Key, BaseURL: fake.URL}}
	cfg.PlanOnly, cfg.Store = true, t.TempDir()
	var problems []rundir.Problem
	cfg.Hooks.Problem = func(p rundir.Problem) { problems = append(problems, p) }
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

	named := benchConfig(t, reg)
	named.Browser, named.Intents = cfg.Browser, []string{"weather-high-oslo"}
	_, err = bench.Bench(t.Context(), named)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `intent weather-high-oslo: the kernel browsers have no profile "ghost", which domain weather.example signs in with`)
	assert.NoFileExists(t, filepath.Join(named.RunsDir, named.RunID, "run.json"))
	assert.Empty(t, fake.Live())
}
