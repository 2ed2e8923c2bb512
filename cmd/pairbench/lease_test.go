//go:build e2e

package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts"
)

// TestSecondRunnerOnARunIsRefused runs a run whose store (a real S3
// server) holds another machine's fresh lease on it: the runner refuses at
// once, naming the holder, before it plans or spends anything. When that
// lease has gone stale (its holder stopped renewing), the runner takes it
// over, says so, runs, and releases it at its end.
func TestSecondRunnerOnARunIsRefused(t *testing.T) {
	tools := needRealStack(t)
	loc := startS3(t, "bench")
	store, err := artifacts.Open(t.Context(), loc)
	require.NoError(t, err)
	lease := func(renewed time.Time) {
		t.Helper()
		require.NoError(t, store.Put(t.Context(), "r1/lease.json", bytes.NewReader([]byte(fmt.Sprintf(
			`{"holder":"ci-runner-7 pid 4242","host":"ci-runner-7","pid":4242,"renewed_at":%q,"ttl_seconds":120}`,
			renewed.UTC().Format(time.RFC3339Nano))))))
	}
	runs := filepath.Join(t.TempDir(), "runs")
	args := []string{"run", exampleRegistry, "--example-sites", "--intent", "weather-high-oslo", "--pairs", "1",
		"--allow-inconclusive", "--plan-only", "--run-id", "r1", "--runs-dir", runs, "--store", loc, "--tools", tools}

	lease(time.Now())
	began := time.Now()
	code, _, stderr := runCLI(t, args...)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "run r1 is being run by another runner (ci-runner-7 pid 4242; its lease in s3://")
	assert.Contains(t, stderr, "a second runner would run, and pay for, the same pairs")
	assert.Less(t, time.Since(began), 20*time.Second, "refused at once, before the smoke gate")
	assert.NotContains(t, stderr, "sandbox check passed")
	ok, err := artifacts.Exists(t.Context(), store, "r1/run.json")
	require.NoError(t, err)
	assert.False(t, ok, "nothing planned")

	lease(time.Now().Add(-10 * time.Minute))
	code, _, stderr = runCLI(t, args...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "took the run's lease over: its holder stopped renewing it")
	assert.Contains(t, stderr, "ci-runner-7 pid 4242")
	ok, err = artifacts.Exists(t.Context(), store, "r1/lease.json")
	require.NoError(t, err)
	assert.False(t, ok, "released at the end")
	ok, err = artifacts.Exists(t.Context(), store, "r1/run.json")
	require.NoError(t, err)
	assert.True(t, ok, "planned")
}
