package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
)

// TestReportFailOn: report --fail-on exits 3 naming what failed the gate:
// the demo has an intent labelled less accurate. Its only no signal is the
// placebo intent, which never fails a gate.
func TestReportFailOn(t *testing.T) {
	out := t.TempDir()
	code, _, stderr := runCmd(t, "report", demoDir, "--out", out, "--fail-on", "less accurate,slower")
	assert.Equal(t, exitGate, code, stderr)
	assert.Contains(t, stderr, "--fail-on: intent books-newest-by-author: less accurate; intent books-price-of-title: slower")

	code, _, stderr = runCmd(t, "report", demoDir, "--out", out, "--fail-on", "faster")
	assert.Equal(t, exitGate, code, stderr)
	assert.Contains(t, stderr, "verdict: faster", "the run's verdict is gated too")

	code, _, stderr = runCmd(t, "report", demoDir, "--out", out, "--fail-on", "no signal")
	assert.Equal(t, exitOK, code, "the placebo intent's label fails no gate: %s", stderr)

	code, _, stderr = runCmd(t, "report", demoDir, "--out", out, "--fail-on", "worse")
	assert.Equal(t, exitOK, code, "the demo benches no head against base, so nothing is worse: %s", stderr)

	code, _, stderr = runCmd(t, "report", demoDir, "--out", out, "--fail-on", "not worse")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `"not worse" is not a label`)
}

// TestMergeFailOn: merge --report --fail-on gates the merged run's report;
// without --report there is no report to gate.
func TestMergeFailOn(t *testing.T) {
	every := make([]string, len(pairbench.Labels))
	for i, l := range pairbench.Labels {
		every[i] = string(l)
	}
	stores(t, func(t *testing.T, loc string, store artifacts.Store) {
		shardedRun(t, store)
		code, _, stderr := runCmd(t, "merge", "--store", loc, "--run-id", "r1", "--out", filepath.Join(t.TempDir(), "m"), "--fail-on", "slower")
		require.Equal(t, exitUsage, code, stderr)
		assert.Contains(t, stderr, "--fail-on needs --report")

		code, _, stderr = runCmd(t, "merge", "--store", loc, "--run-id", "r1", "--out", filepath.Join(t.TempDir(), "m"), "--report",
			"--fail-on", strings.Join(every, ","))
		assert.Equal(t, exitGate, code, stderr)
		assert.Contains(t, stderr, "--fail-on: verdict: ")
	})
}
