//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/internal/clitest"
)

// TestSecondRunnerOnARunIsRefused runs a run whose store (a real S3
// server) holds another machine's fresh lease on it: the runner refuses at
// once, naming the holder, before it plans or spends anything. When that
// lease has gone stale (its holder stopped renewing), the runner takes it
// over, says so, runs, and releases it at its end.
func TestSecondRunnerOnARunIsRefused(t *testing.T) {
	tools := clitest.RealStack(t)
	bin := clitest.Build(t)
	loc := clitest.StartS3(t, "bench")
	store, err := artifacts.Open(t.Context(), loc)
	require.NoError(t, err)
	lease := func(renewed time.Time) {
		t.Helper()
		require.NoError(t, store.Put(t.Context(), "r1/lease.json", bytes.NewReader([]byte(fmt.Sprintf(
			`{"holder":"ci-runner-7 pid 4242","host":"ci-runner-7","pid":4242,"renewed_at":%q,"ttl_seconds":120}`,
			renewed.UTC().Format(time.RFC3339Nano))))))
	}
	runs := filepath.Join(t.TempDir(), "runs")
	args := []string{"run", clitest.ExampleRegistry, "--example-sites", "--intent", "weather-high-oslo", "--pairs", "1",
		"--allow-inconclusive", "--plan-only", "--run-id", "r1", "--runs-dir", runs, "--store", loc, "--tools", tools}

	lease(time.Now())
	began := time.Now()
	code, _, stderr := runBin(t, bin, args...)
	assert.Equal(t, clitest.ExitFailure, code)
	assert.Contains(t, stderr, "run r1 is being run by another runner (ci-runner-7 pid 4242; its lease in s3://")
	assert.Contains(t, stderr, "a second runner would run, and pay for, the same pairs")
	assert.Less(t, time.Since(began), 20*time.Second, "refused at once, before the smoke gate")
	assert.NotContains(t, stderr, "sandbox check passed")
	ok, err := artifacts.Exists(t.Context(), store, "r1/run.json")
	require.NoError(t, err)
	assert.False(t, ok, "nothing planned")

	lease(time.Now().Add(-10 * time.Minute))
	code, _, stderr = runBin(t, bin, args...)
	require.Equal(t, clitest.ExitOK, code, stderr)
	assert.Contains(t, stderr, "took the run's lease over: its holder stopped renewing it")
	assert.Contains(t, stderr, "ci-runner-7 pid 4242")
	ok, err = artifacts.Exists(t.Context(), store, "r1/lease.json")
	require.NoError(t, err)
	assert.False(t, ok, "released at the end")
	ok, err = artifacts.Exists(t.Context(), store, "r1/run.json")
	require.NoError(t, err)
	assert.True(t, ok, "planned")
}

// TestRunnerThatLosesItsLeaseStops takes a running run's lease over in its
// store, as a second runner would after this one stopped renewing: the
// runner stops at its next renewal and its error says why (what the
// service's check run shows as the failure), rather than "context
// canceled", and it does not finish the pairs the new holder now owns.
func TestRunnerThatLosesItsLeaseStops(t *testing.T) {
	tools := clitest.RealStack(t)
	bin := clitest.Build(t)
	loc := clitest.StartS3(t, "bench")
	store, err := artifacts.Open(t.Context(), loc)
	require.NoError(t, err)
	runs := filepath.Join(t.TempDir(), "runs")
	stolen := make(chan struct{})
	go func() {
		defer close(stolen)
		for t.Context().Err() == nil {
			if ok, _ := artifacts.Exists(t.Context(), store, "r2/run.json"); ok {
				store.Put(t.Context(), "r2/lease.json", bytes.NewReader([]byte(fmt.Sprintf(
					`{"holder":"ci-runner-9 pid 99","host":"ci-runner-9","pid":99,"renewed_at":%q,"ttl_seconds":120}`,
					time.Now().UTC().Format(time.RFC3339Nano)))))
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	code, _, stderr := runBin(t, bin, "run", clitest.ExampleRegistry, "--example-sites", "--intent", "weather-high-oslo", "--pairs", "40",
		"--run-id", "r2", "--runs-dir", runs, "--store", loc, "--tools", tools)
	<-stolen
	assert.NotEqual(t, clitest.ExitOK, code, stderr)
	assert.Contains(t, stderr, "lost the run's lease to another runner; stopping")
	assert.Contains(t, stderr, "stopped: another runner took the run's lease over")
	assert.NotContains(t, stderr, "context canceled")
	rows, err := os.ReadFile(filepath.Join(runs, "r2", "rows.jsonl"))
	require.NoError(t, err)
	assert.Less(t, bytes.Count(rows, []byte("\n")), 80, "the runner stopped before it ran every pair")
}
