//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonRecords checks that every line of out is one JSON log record (time,
// level, msg) and returns them.
func jsonRecords(t *testing.T, out string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var rec map[string]any
		if !assert.NoError(t, json.Unmarshal([]byte(line), &rec), "line %d is not JSON: %q", i+1, line) {
			continue
		}
		for _, k := range []string{"time", "level", "msg"} {
			assert.Contains(t, rec, k, "line %d: %q", i+1, line)
		}
		recs = append(recs, rec)
	}
	return recs
}

// TestRunLogsAndResumeCommand runs the real binary as a user would, with
// --log-format json: every line it writes on stderr is a JSON record (no
// Go log line before slog's), the first names the run id, and a SIGINT
// (Ctrl-C) mid-run ends with a record holding the exact command that
// resumes the run. That command, run by a shell, finishes the run, and
// stdout ends with the verdict table.
func TestRunLogsAndResumeCommand(t *testing.T) {
	tools := clitest.RealStack(t)
	bin := clitest.Build(t)
	ctx := deadlineContext(t)
	e := newBenchEnv(t, bin, tools, "")
	var stdout bytes.Buffer
	var w clitest.LockedBuffer
	cmd := exec.CommandContext(ctx, bin, "run", filepath.Join(repoRoot, "examples", "registry"), "--example-sites",
		"--intent", "books-cheapest-by-author", "--pairs", "2", "--allow-inconclusive", "--slots", "1", "--start-delay", "0",
		"--runs-dir", e.runs, "--temp-dir", e.temp, "--tools", tools, "--log-format", "json")
	cmd.Stdout, cmd.Stderr = &stdout, &w
	require.NoError(t, cmd.Start())
	awaitWhileRunning(t, ctx, cmd, "", func() bool { return strings.Contains(w.String(), `"msg":"trial"`) }, "a first trial")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v", err)
	assert.Equal(t, 130, exit.ExitCode())

	out := w.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	last := lines[len(lines)-1]
	assert.Equal(t, "pairbench: stopped by interrupt", last, "the command's own last line")
	recs := jsonRecords(t, strings.Join(lines[:len(lines)-1], "\n"))
	require.NotEmpty(t, recs)
	assert.Equal(t, "run", recs[0]["msg"], "the run id comes first")
	runID, _ := recs[0]["run_id"].(string)
	require.NotEmpty(t, runID)
	var resume string
	for _, r := range recs {
		if m, _ := r["msg"].(string); strings.HasPrefix(m, "stopped; to resume the run, run: ") {
			resume = strings.TrimPrefix(m, "stopped; to resume the run, run: ")
		}
	}
	require.NotEmpty(t, resume, "the resume command is logged")
	assert.Contains(t, resume, "--run-id "+runID)
	assert.True(t, strings.HasPrefix(resume, "pairbench run "), resume)

	// The command as printed, run by a shell with this binary as pairbench.
	sh := exec.CommandContext(ctx, "sh", "-c", resume)
	sh.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
	stdout.Reset()
	var errOut bytes.Buffer
	sh.Stdout, sh.Stderr = &stdout, &errOut
	require.NoError(t, sh.Run(), errOut.String())
	jsonRecords(t, errOut.String())
	assert.Regexp(t, regexp.MustCompile(`(?s)report\.html\n\nverdict: \S.* \(run `+regexp.QuoteMeta(runID)+`\)\nintent +label +pairs +control correct +treatment correct +median seconds \(control → treatment\)\nbooks-cheapest-by-author +\S+( \S+)? +2/2 +\d/\d +\d/\d +.*\n$`), stdout.String())
}
