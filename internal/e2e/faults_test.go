//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/artifacts/s3test"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/internal/fulldisk"
)

// faultyS3 starts a real S3 server (versitygw) behind a fault-injecting
// proxy; it returns the proxy, the store location through it for a run's
// --store, the store itself reached directly, for checking, and the
// server's process id.
func faultyS3(t *testing.T, prefix string) (*faultProxy, string, artifacts.Store, int) {
	t.Helper()
	bin, err := filepath.Abs("../../tools/bin/versitygw")
	require.NoError(t, err)
	s3 := s3test.StartT(t, bin, clitest.S3Access, clitest.S3Secret, clitest.S3Bucket)
	t.Setenv("AWS_ACCESS_KEY_ID", clitest.S3Access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", clitest.S3Secret)
	t.Setenv("AWS_REGION", s3test.Region)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	proxy := newFaultProxy(t, s3.Endpoint)
	loc := fmt.Sprintf("s3://%s/%s?endpoint=%s&path_style=true&region=%s", clitest.S3Bucket, prefix, proxy.URL, s3test.Region)
	direct, err := artifacts.Open(t.Context(), fmt.Sprintf("s3://%s/%s?endpoint=%s&path_style=true&region=%s", clitest.S3Bucket, prefix, s3.Endpoint, s3test.Region))
	require.NoError(t, err)
	return proxy, loc, direct, s3.PID()
}

// TestStoreFaults runs benches whose S3 store fails the ways stores fail.
// A flaky store (503s, reset connections, slow answers) costs the run
// nothing: every upload is retried until it lands, the report is put only
// after every row, and the store ends holding the run as the directory
// does. A store that goes down mid-run and stays down leaves the trials
// alone and ends the run with a clear error (exit 1) and nothing published;
// the same command once the store is back publishes the whole run.
func TestStoreFaults(t *testing.T) {
	tools := clitest.RealStack(t)
	clitest.BecomeSubreaper(t)
	ctx := deadlineContext(t)
	proxy, loc, direct, s3 := faultyS3(t, "faults")
	bin := clitest.Build(t)

	t.Run("flaky", func(t *testing.T) {
		var n atomic.Int64
		proxy.set(func(r *http.Request) *fault {
			switch i := n.Add(1); {
			case i%3 == 0:
				return &fault{Status: http.StatusServiceUnavailable}
			case i%5 == 0:
				return &fault{Reset: true}
			case i%7 == 0:
				return &fault{Delay: 1500 * time.Millisecond}
			}
			return nil
		})
		defer proxy.set(nil)
		e := newBenchEnv(t, bin, tools, "flaky", "--intent", "weather-high-oslo", "--pairs", "2", "--slots", "2", "--store", loc)
		cmd, log := e.start(t, ctx)
		code, sig := clitest.ExitStatus(cmd.Wait())
		require.Zero(t, code, "a flaky store costs the run nothing (signal %v): %s", sig, tail(log))
		clitest.CheckCompleteRun(t, e.runDir())
		storeHoldsTheRun(t, direct, e.runID, e.runDir())

		injected, stored := proxy.counts()
		t.Logf("faults injected: %v; objects stored: %d", injected, len(stored))
		for _, kind := range []string{"503", "reset", "slow"} {
			assert.Positive(t, injected[kind], "the store failed with %s", kind)
		}
		report := slices.IndexFunc(stored, func(key string) bool { return strings.HasSuffix(key, "/faults/flaky/report.json") })
		require.GreaterOrEqual(t, report, 0, "the report is stored: %v", stored)
		for i, key := range stored {
			if strings.HasSuffix(key, "/rows.jsonl") {
				assert.Less(t, i, report, "every upload of the rows comes before the report's")
			}
		}
	})

	t.Run("down", func(t *testing.T) {
		// One pair: the store goes down after its first trial's row, and
		// its second trial must still run and score.
		e := newBenchEnv(t, bin, tools, "down", "--intent", "weather-high-oslo", "--pairs", "1", "--slots", "1", "--store", loc)
		cmd, log := e.start(t, ctx)
		// The store goes down after the first row and stays down.
		awaitWhileRunning(t, ctx, cmd, log, func() bool { return countLines(filepath.Join(e.runDir(), "rows.jsonl")) > 0 }, "a row")
		proxy.set(func(*http.Request) *fault { return &fault{Status: http.StatusServiceUnavailable} })
		began := time.Now()
		code, sig := clitest.ExitStatus(cmd.Wait())
		proxy.set(nil)
		assert.Equal(t, clitest.ExitFailure, code, "a store that stays down fails the run (signal %v): %s", sig, tail(log))
		// The whole log: the error names every file that failed, which
		// under load can be more than tail shows.
		out, err := os.ReadFile(log)
		require.NoError(t, err)
		assert.Contains(t, string(out), "the upload to the store")
		assert.Contains(t, string(out), "run the same command again to upload it")
		t.Logf("the run ended %s after the store went down", time.Since(began).Round(time.Second))
		clitest.CheckCompleteRun(t, e.runDir()) // the trials did not care
		assert.Nil(t, storeBytes(t, direct, "down/report.json"), "nothing is published while the store is down")

		cmd, log = e.start(t, ctx)
		code, sig = clitest.ExitStatus(cmd.Wait())
		require.Zero(t, code, "the same command, the store back (signal %v): %s", sig, tail(log))
		clitest.CheckCompleteRun(t, e.runDir())
		storeHoldsTheRun(t, direct, e.runID, e.runDir())
	})
	clitest.WaitNoOrphans(t, clitest.OrphanGrace, s3)
}

// TestFullDisk runs a bench whose runs directory is on a small filesystem
// the test makes (a tmpfs with a size) and fills it once the run has a row:
// the run stops with an error that says the disk is full, its rows file
// still ends with its last whole row, and once there is space again the
// same command finishes the run, every pair scored once.
func TestFullDisk(t *testing.T) {
	tools := clitest.RealStack(t)
	clitest.BecomeSubreaper(t)
	ctx := deadlineContext(t)

	e := newBenchEnv(t, clitest.Build(t), tools, "full", "--intent", "weather-high-oslo", "--pairs", "2", "--slots", "1")
	require.NoError(t, os.MkdirAll(e.runs, 0o755))
	fulldisk.MountAt(t, e.runs, 64<<20)

	cmd, log := e.start(t, ctx)
	rows := filepath.Join(e.runDir(), "rows.jsonl")
	awaitWhileRunning(t, ctx, cmd, log, func() bool { return countLines(rows) > 0 }, "a row")
	filler := fulldisk.Fill(t, e.runs)
	code, sig := clitest.ExitStatus(cmd.Wait())
	assert.Equal(t, clitest.ExitFailure, code, "a full disk stops the run (signal %v): %s", sig, tail(log))
	assert.Contains(t, tail(log), "no space left", "the error says why")

	b, err := os.ReadFile(rows)
	require.NoError(t, err)
	got, partial, err := pairbench.ReadRows(bytes.NewReader(b))
	require.NoError(t, err, "the rows file parses")
	assert.Zero(t, partial, "no torn row: the file ends with its last whole row")
	assert.NotEmpty(t, got)
	for _, r := range got {
		assert.NotContains(t, r.Reason, "no space left", "a full disk is no trial's outcome: %s", r.TrialDir)
	}
	clitest.WaitNoOrphans(t, clitest.OrphanGrace)

	require.NoError(t, os.Remove(filler))
	cmd, log = e.start(t, ctx)
	code, sig = clitest.ExitStatus(cmd.Wait())
	require.Zero(t, code, "resume once there is space (signal %v): %s", sig, tail(log))
	clitest.CheckCompleteRun(t, e.runDir())
	assert.Empty(t, e.leftDirs(t))
}
