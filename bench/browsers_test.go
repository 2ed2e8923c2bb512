package bench_test

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/browser/kernel"
	"github.com/pairbench/pairbench/browser/kernel/kerneltest"
	"github.com/pairbench/pairbench/examples/site"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/rundir"
)

// fakeKernel is a fake Kernel whose browsers reach the example sites.
func fakeKernel(t *testing.T, profiles ...string) *kerneltest.Server {
	return fakeKernelServing(t, site.New(), profiles...)
}

// fakeKernelServing is a fake Kernel whose browsers reach h at the example
// sites' hosts.
func fakeKernelServing(t *testing.T, h http.Handler, profiles ...string) *kerneltest.Server {
	return kerneltest.Start(t, exampleHosts(t, h), nil, profiles...)
}

// exampleHosts serves h on loopback and maps the example sites' hosts to it.
func exampleHosts(t *testing.T, h http.Handler) map[string]string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	hosts := map[string]string{}
	for _, name := range site.Hosts() {
		hosts[name] = strings.TrimPrefix(srv.URL, "http://")
	}
	return hosts
}

// TestBenchOnKernelBrowsers runs a real one-pair bench whose browsers are
// Kernel's (the fake's, real Chromium behind Kernel's API): both arms'
// agents drive their remote browser through the DevTools relay, every
// browser is created stealthy and deleted, and neither the API key nor a
// browser's token reaches anything the run wrote.
func TestBenchOnKernelBrowsers(t *testing.T) {
	realstack.Need(t)
	fake := fakeKernel(t)
	cfg := benchConfig(t, "../examples/registry")
	cfg.Intents = []string{"weather-high-oslo"}
	cfg.Browser = bench.Browsers{Provider: bench.BrowserKernel, Stealth: true, Kernel: kernel.Config{APIKey: fake.Key, BaseURL: fake.URL}}

	res, err := bench.Bench(t.Context(), cfg)
	require.NoError(t, err)
	var rows []pairbench.Row
	_, err = res.Dir.ScanRows(rundir.RowQuery{RunID: cfg.RunID}, func(r *pairbench.Row) { rows = append(rows, *r) })
	require.NoError(t, err)
	plan, err := res.Dir.ReadPlan()
	require.NoError(t, err)
	// On a busy machine an attempt may abort and its pair run again; each
	// planned trial is scored once, correct.
	final := scoredOnce(t, plan, rows)
	assert.Len(t, final, 2, "both arms of the one pair")
	for _, r := range final {
		assert.Equal(t, pairbench.Correct, r.Outcome, "%s: %s %s", r.Arm, r.Reason, r.Error)
	}

	creates := fake.Creates()
	assert.GreaterOrEqual(t, len(creates), 3, "the smoke gate's setup and both arms'")
	for _, c := range creates {
		assert.True(t, c.Stealth)
		assert.Nil(t, c.Profile)
	}
	assert.Empty(t, fake.Live(), "every browser is deleted")
	assert.Empty(t, fake.BadKeys())

	require.NotNil(t, plan.Browser)
	assert.Equal(t, "kernel", plan.Browser.Provider)
	assert.True(t, plan.Browser.Stealth)

	// Nothing the run wrote (transcripts, setup.json, the agents' files)
	// holds the key or a browser's websocket token.
	filepath.WalkDir(cfg.RunsDir, func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.NotContains(t, string(b), fake.Key, path)
		assert.NotContains(t, string(b), "jwt=", path)
		return nil
	})
}

func TestOpenRefusesBrowserConfigurationsThatCannotRun(t *testing.T) {
	for _, c := range []struct {
		mutate func(*bench.Config)
		want   string
	}{
		{func(c *bench.Config) { c.Browser.Provider = "firefox" }, `--browser "firefox": want one of [local kernel cdp]`},
		{func(c *bench.Config) { c.Browser.Stealth = true }, "--stealth needs a cloud browser"},
		{func(c *bench.Config) { c.Browser.Provider = bench.BrowserKernel }, "kernel: no API key (set KERNEL_API_KEY)"},
		{func(c *bench.Config) {
			c.Browser = bench.Browsers{Provider: bench.BrowserKernel, Kernel: kernel.Config{APIKey: "k"}}
			c.ExampleSites = true
		}, "a cloud browser cannot reach sites served on this machine's loopback"},
		{func(c *bench.Config) { c.Browser.Provider = bench.BrowserCDP }, "configure a websocket URL template (url) or a create request (create)"},
	} {
		cfg := benchConfig(t, "../examples/registry")
		c.mutate(&cfg)
		_, err := bench.Open(t.Context(), cfg)
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
		assert.NoDirExists(t, filepath.Join(cfg.RunsDir, cfg.RunID), "nothing is written")
	}
}
