package bench_test

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/browser/kernel"
	"github.com/pairbench/pairbench/browser/kernel/kerneltest"
	"github.com/pairbench/pairbench/examples/site"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
)

// TestResumeWithAnotherWebMCPIsRefused: every trial of a run goes through
// one WebMCP. A resume naming another --webmcp is refused, even with
// Force, and run.json stays as it was; one naming none resumes the run in
// its own mode.
func TestResumeWithAnotherWebMCPIsRefused(t *testing.T) {
	realstack.Need(t, realstack.NodeTools, realstack.Chromium) // the agents' installs are checked before the plan
	cfg := benchConfig(t, "../examples/registry")
	cfg.Intents = []string{"weather-high-oslo"}
	reg, err := intents.Load(cfg.Registry)
	require.NoError(t, err)
	m, err := bench.ParseModel(cfg.Model, "")
	require.NoError(t, err)
	plan, _, err := runner.NewPlan(reg, runner.PlanOptions{RunID: cfg.RunID, Intents: cfg.Intents, Pairs: cfg.Pairs, Model: m,
		Caps: cfg.Caps, Seed: cfg.Seed, Alpha: cfg.Alpha, Now: time.Now(), WebMCP: pairbench.WebMCPNative})
	require.NoError(t, err)
	dir := rundir.RunDir{Path: filepath.Join(cfg.RunsDir, cfg.RunID)}
	require.NoError(t, os.MkdirAll(dir.Path, 0o755))
	require.NoError(t, dir.WritePlan(plan))

	for _, force := range []bool{false, true} {
		cfg.Browser.WebMCP, cfg.Force = pairbench.WebMCPPolyfill, force
		_, err := bench.Open(t.Context(), cfg)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "run r1 is benched with --webmcp native, not polyfill; resume it with --webmcp native (or without --webmcp)")
	}
	after, err := dir.ReadPlan()
	require.NoError(t, err)
	assert.Equal(t, pairbench.WebMCPNative, after.WebMCP, "run.json is as it was")

	cfg.Browser.WebMCP, cfg.Force = "", true // the versions differ from the stored plan's: forced past
	r, err := bench.Open(t.Context(), cfg)
	require.NoError(t, err, "a resume without --webmcp keeps the run's")
	require.NoError(t, r.Close())
}

// TestOpenRefusesAnUnknownWebMCPMode: a mode that is neither is one line,
// before anything of the run is made.
func TestOpenRefusesAnUnknownWebMCPMode(t *testing.T) {
	cfg := benchConfig(t, "../examples/registry")
	cfg.Browser.WebMCP = "builtin"
	_, err := bench.Open(t.Context(), cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `--webmcp "builtin": want polyfill (the default) or native`)
	assert.NoDirExists(t, filepath.Join(cfg.RunsDir, cfg.RunID))
}

// withOwnTool serves h, with a tool of the page's own registered on
// weather.example's pages wherever the browser has WebMCP, as a site that
// adopted WebMCP does.
func withOwnTool(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "weather.example" {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		maps.Copy(w.Header(), rec.Header())
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
			io.WriteString(w, `<script>if (document.modelContext) document.modelContext.registerTool({name: "forecast_widget",
  description: "The site's own forecast.", execute: async () => "sunny"});</script>`)
		}
	})
}

// TestSmokeGateChecksNativeControlIsToolFree: with --webmcp native the
// smoke gate sets up control on each start page and stops the run, before
// run.json, when the browser lists a tool of the page's own there; the
// polyfill mode records such a tool instead, and a tool-free site passes
// natively with its tools registered through the browser.
func TestSmokeGateChecksNativeControlIsToolFree(t *testing.T) {
	realstack.Need(t)
	planOnly := func(mode pairbench.WebMCPImpl, h http.Handler) (bench.Config, error) {
		cfg := benchConfig(t, "../examples/registry")
		cfg.Intents = []string{"weather-high-oslo"}
		cfg.Hosts = exampleHosts(t, h)
		cfg.Browser.WebMCP = mode
		cfg.PlanOnly, cfg.Store = true, t.TempDir()
		_, err := bench.Bench(t.Context(), cfg)
		return cfg, err
	}
	cfg, err := planOnly(pairbench.WebMCPNative, withOwnTool(site.New()))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "intent weather-high-oslo, control setup (--webmcp native): ")
	assert.Contains(t, err.Error(), "harness error: control's start page http://weather.example/ has tools of its own in the browser's WebMCP (forecast_widget in frame ")
	assert.NoFileExists(t, filepath.Join(cfg.RunsDir, cfg.RunID, "run.json"))

	_, err = planOnly(pairbench.WebMCPPolyfill, withOwnTool(site.New()))
	require.NoError(t, err, "the polyfill's control has no WebMCP of the browser's to list the tool")

	cfg, err = planOnly(pairbench.WebMCPNative, site.New())
	require.NoError(t, err)
	plan, err := (rundir.RunDir{Path: filepath.Join(cfg.RunsDir, cfg.RunID)}).ReadPlan()
	require.NoError(t, err)
	assert.Equal(t, pairbench.WebMCPNative, plan.WebMCP)
}

// TestBenchNativeOnKernelBrowsers: --webmcp native on cloud browsers with
// WebMCP built in (the fake Kernel's, Chromium with the switch behind it)
// lists and invokes through the browser's DevTools WebMCP domain over the
// service's websocket: every treatment call is one the browser saw, and
// the rows record native mode without switches of pairbench's. On cloud
// browsers without it, treatment's tools cannot register and the smoke
// gate stops the run, naming the missing modelContext.
func TestBenchNativeOnKernelBrowsers(t *testing.T) {
	realstack.Need(t)
	for _, builtIn := range []bool{true, false} {
		var flags []string
		if builtIn {
			flags = []string{bench.NativeWebMCPSwitch}
		}
		fake := kerneltest.Start(t, exampleHosts(t, site.New()), flags)
		cfg := benchConfig(t, "../examples/registry")
		cfg.Intents = []string{"weather-high-oslo"}
		cfg.Browser = bench.Browsers{Provider: bench.BrowserKernel, Kernel: kernel.Config{APIKey: fake.Key, BaseURL: fake.URL},
			WebMCP: pairbench.WebMCPNative}
		res, err := bench.Bench(t.Context(), cfg)
		if !builtIn {
			require.Error(t, err)
			assert.Contains(t, err.Error(), "document.modelContext is missing")
			continue
		}
		require.NoError(t, err)
		var rows []pairbench.Row
		_, err = res.Dir.ScanRows(rundir.RowQuery{RunID: cfg.RunID}, func(r *pairbench.Row) { rows = append(rows, *r) })
		require.NoError(t, err)
		calls := 0
		for _, r := range rows {
			if !r.Outcome.Scored() {
				continue
			}
			require.NotNil(t, r.WebMCPEnv)
			assert.Equal(t, pairbench.WebMCPNative, r.WebMCPEnv.Mode)
			assert.Empty(t, r.WebMCPEnv.Switches, "a cloud browser's switches are the service's")
			if r.Arm == pairbench.Treatment {
				require.Len(t, r.BrowserWebMCP, len(r.WebMCP))
				calls += len(r.WebMCP)
			}
		}
		assert.Positive(t, calls)
	}
}
