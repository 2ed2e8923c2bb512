package launch_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/agent/claudecode"
	"github.com/pairbench/pairbench/agent/codex"
	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/agent/pi"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// endless is what a hostile agent writes to its stdout or stderr: n bytes
// with no newline, then one.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	if e.n < 0 {
		return 0, io.EOF
	}
	if e.n == 0 {
		e.n = -1
		p[0] = '\n'
		return 1, nil
	}
	k := min(len(p), e.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	e.n -= k
	return k, nil
}

// TestEscapeAgentOutputExhaustsTheRunner: the agent owns what it writes to
// the pipes the runner reads. One line with no end, held whole by the
// runner, would take the runner's memory (and with it every other trial
// on the host); each reader holds at most launch.MaxRecord of it.
func TestEscapeAgentOutputExhaustsTheRunner(t *testing.T) {
	readers := map[string]func(io.Reader){
		"pi stdout":          func(r io.Reader) { pi.NewStream(runner.Caps{}, io.Discard).Feed(r) },
		"claude code stdout": func(r io.Reader) { claudecode.NewStream(runner.Caps{}, rundir.Model{}, io.Discard).Feed(r) },
		"codex stdout":       func(r io.Reader) { codex.NewStream(runner.Caps{}, rundir.Model{}, io.Discard).Feed(r) },
		"codex stderr":       func(r io.Reader) { codex.NewStream(runner.Caps{}, rundir.Model{}, nil).Diagnostics(r, io.Discard) },
	}
	for name, read := range readers {
		t.Run(name, func(t *testing.T) {
			src := &endless{n: 3 * launch.MaxRecord}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			read(src)
			runtime.ReadMemStats(&after)
			require.Equal(t, -1, src.n, "the reader read it all")
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(2*launch.MaxRecord),
				"a line of %d MiB without an end cost the runner %d MiB", 3*launch.MaxRecord>>20, (after.TotalAlloc-before.TotalAlloc)>>20)
		})
	}
}

// TestRecordsSkipsAnOverlongLine: a line past the limit is skipped whole;
// the records around it still arrive, as they were written.
func TestRecordsSkipsAnOverlongLine(t *testing.T) {
	var got []string
	in := io.MultiReader(strings.NewReader("first\n"), &endless{n: 300}, strings.NewReader("second\nlast"))
	c, err := launch.Records(in, 100, func(line []byte) pairbench.Cap {
		got = append(got, string(line))
		return ""
	})
	require.NoError(t, err)
	assert.Empty(t, c)
	assert.Equal(t, []string{"first\n", "second\n", "last"}, got)

	long := strings.Repeat("y", 200<<10) + "\n" // longer than the reader's buffer, under the limit
	got = nil
	_, err = launch.Records(strings.NewReader("a\n"+long+"b"), 1<<20, func(line []byte) pairbench.Cap {
		got = append(got, string(line))
		return ""
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"a\n", long, "b"}, got, "a long line under the limit arrives whole")

	c, err = launch.Records(strings.NewReader("a\nstop\nnever\n"), 100, func(line []byte) pairbench.Cap {
		if string(line) == "stop\n" {
			return pairbench.CapTurns
		}
		return ""
	})
	require.NoError(t, err)
	assert.Equal(t, pairbench.CapTurns, c, "a cap ends the reading")
}

// TestEscapeAgentTranscriptFlood: every line the agent's stream wrote to
// the transcript was kept on disk and its time in the runner's memory
// (24 bytes for a 2-byte line), for as long as the agent wrote: a flood
// of short records took the runner's memory and disk, and every trial's
// with them. Run keeps at most MaxTranscriptLines lines (and
// MaxTranscriptBytes bytes).
func TestEscapeAgentTranscriptFlood(t *testing.T) {
	realstack.Need(t, realstack.Bubblewrap)
	exe, err := os.Executable()
	require.NoError(t, err)
	tmp := sandboxtest.TempDir(t)
	transcript := filepath.Join(t.TempDir(), "transcript.jsonl")
	flood := launch.MaxTranscriptLines + launch.MaxTranscriptLines/4
	res, err := launch.Run(t.Context(), launch.Launch{
		Name: "fake",
		Task: runner.AgentTask{Caps: runner.Caps{Time: 5 * time.Minute}, TranscriptPath: transcript},
		Policy: func(egress *sandbox.Egress, env map[string]string) sandbox.Policy {
			return sandbox.Policy{Env: env, Egress: egress, Executable: exe, TempRoot: tmp}
		},
		Configure: func(string, []runner.MCPServer) ([]string, error) {
			return []string{"/bin/sh", "-c", "yes x | head -n " + strconv.Itoa(flood)}, nil
		},
		Stream:   func(w io.Writer, _ *launch.Meter) launch.Stream { return &lines{w: w} },
		TempRoot: tmp,
	})
	require.NoError(t, err)
	require.Equal(t, flood, res.Turns, "the stream read every line: %s", res.Stderr)
	kept, err := os.ReadFile(transcript)
	require.NoError(t, err)
	assert.LessOrEqual(t, bytes.Count(kept, []byte("\n")), launch.MaxTranscriptLines, "the transcript kept every line the agent wrote")
	assert.LessOrEqual(t, len(res.TranscriptTimes), launch.MaxTranscriptLines, "the runner kept the time of every line the agent wrote")
	assert.Equal(t, bytes.Count(kept, []byte("\n")), len(res.TranscriptTimes), "a time for each line kept")
}
