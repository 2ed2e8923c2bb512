package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/rundir"
)

// TestRunOnKernelBrowsers runs `pairbench run --browser kernel --stealth
// --plan-only` against a fake Kernel (real Chromium behind Kernel's API)
// with the key in KERNEL_API_KEY, as an operator would: the flags and the
// key reach the bench, whose smoke gate runs its agent on Kernel's stealthy
// browsers and deletes them, and run.json records the provider. The trials
// themselves on Kernel browsers are bench's TestBenchOnKernelBrowsers.
func TestRunOnKernelBrowsers(t *testing.T) {
	realstack.Need(t)
	fake := clitest.KernelForExampleSites(t)

	runs := t.TempDir()
	code, stdout, stderr := runCLI(t, "run", "../../examples/registry", "--browser", "kernel", "--stealth",
		"--kernel-url", fake.URL, "--intent", "weather-high-oslo", "--pairs", "1", "--slots", "1", "--start-delay", "0",
		"--run-id", "k1", "--runs-dir", runs, "--tools", "../../tools/node_modules", "--temp-dir", sandboxtest.TempDir(t),
		"--plan-only")
	require.Equal(t, exitOK, code, stderr)
	dir := rundir.RunDir{Path: filepath.Join(runs, "k1")}
	assert.Equal(t, dir.File(rundir.PlanFile)+"\n", stdout)
	plan, err := dir.ReadPlan()
	require.NoError(t, err)
	require.NotNil(t, plan.Browser)
	assert.Equal(t, "kernel", plan.Browser.Provider)
	assert.True(t, plan.Browser.Stealth)
	assert.NotEmpty(t, fake.Creates(), "the smoke gate's browsers are Kernel's")
	for _, c := range fake.Creates() {
		assert.True(t, c.Stealth)
	}
	assert.Empty(t, fake.Live())
	assert.Empty(t, fake.BadKeys(), "KERNEL_API_KEY is the key sent")
}

// browserFlagMistakes are --browser settings run and serve refuse (with
// KERNEL_API_KEY unset), and what they say.
var browserFlagMistakes = map[string]string{
	"--browser firefox":                `--browser "firefox": want one of [local kernel cdp]`,
	"--stealth":                        "--stealth needs a cloud browser",
	"--browser kernel":                 "set KERNEL_API_KEY",
	"--browser cdp":                    "--browser cdp needs --cdp-config FILE",
	"--browser cdp --cdp-config /nope": "--cdp-config: open /nope",
	"--cdp-config x.json":              "--cdp-config is for --browser cdp",
	"--browser kernel --example-sites": "a cloud browser cannot reach sites served on this machine's loopback",
}

func TestBrowserFlagErrorsExitTwo(t *testing.T) {
	t.Setenv("KERNEL_API_KEY", "")
	for args, want := range browserFlagMistakes {
		code, _, stderr := runCLI(t, append([]string{"run", "../../examples/registry", "--runs-dir", t.TempDir()}, strings.Fields(args)...)...)
		assert.Equal(t, exitUsage, code, "%s: %s", args, stderr)
		assert.Contains(t, stderr, want, args)
	}
}
