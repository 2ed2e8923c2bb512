//go:build e2e

package e2e

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/internal/offline"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/internal/sandboxtest"
)

// runOffline runs the real binary with args in a network namespace of its
// own (loopback only), where the Chromium it starts reaches nothing outside.
func runOffline(t *testing.T, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runProcess(t, offline.Command(bin, clitest.AllowInconclusive(args)...))
}

// TestValidateBrowser registers the example registry's tool files in
// Chromium, then a copy in which one file throws only in a page: validate
// accepts it, validate --browser names it at its line with the browser's
// message.
func TestValidateBrowser(t *testing.T) {
	realstack.Need(t, realstack.Chromium)
	bin := clitest.Build(t)
	tmp := sandboxtest.TempDir(t)

	code, out, errOut := runOffline(t, bin, "validate", "--browser", "--temp-dir", tmp, clitest.ExampleRegistry)
	require.Equal(t, clitest.ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Equal(t, clitest.ExampleRegistry+": ok: 2 domains, 4 tools (3 registered), 4 intents; every baseline answer grades correct; "+
		"in Chromium every tool file is live where its URL patterns match and nowhere else (6 pages, 1 browser)\n", out)
	assert.Empty(t, errOut)

	broken := clitest.BrokenCopy(t, [3]string{"domains/books.example/tools/list_genre.js",
		`const GENRES = ["fiction", "poetry", "essays"];`,
		`const GENRES = ["fiction", "poetry", "essays"];
if (typeof document !== "undefined") GENRES.push(document.title.trim().first.toLowerCase());`})
	code, out, errOut = runOffline(t, bin, "validate", broken)
	assert.Equal(t, clitest.ExitOK, code, "validate alone cannot see it: %s %s", out, errOut)

	code, out, errOut = runOffline(t, bin, "validate", "--browser", "--temp-dir", tmp, broken)
	assert.Equal(t, clitest.ExitFailure, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	file := filepath.Join(broken, "domains/books.example/tools/list_genre.js")
	// It fails alike on every page its pattern matches: one problem, on
	// the first page checked, an intent's start page.
	assert.Equal(t, file+":4: in Chromium on http://books.example/ (intent books-cheapest-by-author): "+
		"tool list_genre did not register: TypeError: Cannot read properties of undefined (reading 'toLowerCase')\n", out)
	assert.Contains(t, errOut, "1 problem")
}

// TestWholeExampleRegistryBench is the user's command, `pairbench run
// examples/registry --example-sites --pairs N`, over every example intent
// (the demo runs three): the smoke gate checks every domain and entry tool,
// and no treatment trial is aborted.
func TestWholeExampleRegistryBench(t *testing.T) {
	tools := clitest.RealStack(t)
	bin := clitest.Build(t)
	runs, tmp := t.TempDir(), sandboxtest.TempDir(t)
	code, stdout, stderr := runOffline(t, bin, "run", clitest.ExampleRegistry, "--example-sites", "--pairs", "2", "--slots", "2",
		"--start-delay", "0", "--seed", "3", "--run-id", "whole", "--runs-dir", runs, "--temp-dir", tmp, "--tools", tools)
	require.Equal(t, clitest.ExitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, tail2(stderr))
	assert.Contains(t, stderr, `msg="smoke gate: every intent's entry tool is live on its start page, and no registered tool failed to register there" intents=4 start_pages=2 browsers=1`)

	rows := clitest.ReadRows(t, filepath.Join(runs, "whole", "rows.jsonl"))
	seen := map[string]int{}
	for _, r := range rows {
		if r.Arm == pairbench.Treatment {
			assert.NotEqual(t, pairbench.Aborted, r.Outcome, "%s pair %d: %s", r.Intent, r.Pair, r.Reason)
			assert.Empty(t, r.Unregistered, r.Intent)
		}
		if r.Stage == pairbench.StagePair {
			seen[r.Intent]++
		}
	}
	assert.Equal(t, map[string]int{"books-cheapest-by-author": 4, "books-count-by-author": 4, "books-cheapest-poetry": 4, "weather-high-oslo": 4}, seen,
		"every example intent, two pairs each, none run again")
}

// TestSmokeGateChecksEveryDomain: a tool file of the last intent's domain
// that fails only in a page stops the run at the smoke gate, named with its
// file, line and the browser's message, before any pair and before
// run.json. (The gate used to set up the first intent only, so such a run
// started and aborted every pair of the other domain.)
func TestSmokeGateChecksEveryDomain(t *testing.T) {
	tools := clitest.RealStack(t)
	bin := clitest.Build(t)
	broken := clitest.BrokenCopy(t, [3]string{"domains/weather.example/tools/list_cities.js",
		"async function getJSON(path) {",
		"if (typeof document !== \"undefined\") null.x;\nasync function getJSON(path) {"})
	runs := t.TempDir()
	code, stdout, stderr := runOffline(t, bin, "run", broken, "--example-sites", "--intent", "books-cheapest-by-author,weather-high-oslo",
		"--pairs", "1", "--run-id", "gate", "--runs-dir", runs, "--temp-dir", sandboxtest.TempDir(t), "--tools", tools)
	require.Equal(t, clitest.ExitFailure, code, "stdout:\n%s\nstderr:\n%s", stdout, tail2(stderr))
	assert.Contains(t, stderr, "smoke gate: treatment setup: 1 problem with the registered tools:\n"+
		"  tool list_cities (domains/weather.example/tools/list_cities.js:2) on http://weather.example/ (intent weather-high-oslo): "+
		"did not register: TypeError: Cannot read properties of null (reading 'x')")
	assert.NoFileExists(t, filepath.Join(runs, "gate", "run.json"), "a run stopped by the smoke gate freezes no plan")
	assert.NoFileExists(t, filepath.Join(runs, "gate", "rows.jsonl"), "no pair was spent")
	assert.NoDirExists(t, filepath.Join(runs, "gate"), "a failed smoke gate leaves nothing behind, not even the run's lock")
}

func tail2(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}
