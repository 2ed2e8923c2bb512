package agent_test

import (
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/runner/agent"
	"github.com/pairbench/pairbench/runner/agent/claudecode"
	"github.com/pairbench/pairbench/runner/agent/codex"
	"github.com/pairbench/pairbench/runner/agent/pi"
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
// on the host); each reader holds at most agent.MaxRecord of it.
func TestEscapeAgentOutputExhaustsTheRunner(t *testing.T) {
	readers := map[string]func(io.Reader){
		"pi stdout":          func(r io.Reader) { pi.NewStream(runner.Caps{}, io.Discard).Feed(r) },
		"claude code stdout": func(r io.Reader) { claudecode.NewStream(runner.Caps{}, runner.Model{}, io.Discard).Feed(r) },
		"codex stdout":       func(r io.Reader) { codex.NewStream(runner.Caps{}, runner.Model{}, io.Discard).Feed(r) },
		"codex stderr":       func(r io.Reader) { codex.NewStream(runner.Caps{}, runner.Model{}, nil).Diagnostics(r, io.Discard) },
	}
	for name, read := range readers {
		t.Run(name, func(t *testing.T) {
			src := &endless{n: 3 * agent.MaxRecord}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			read(src)
			runtime.ReadMemStats(&after)
			require.Equal(t, -1, src.n, "the reader read it all")
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(2*agent.MaxRecord),
				"a line of %d MiB without an end cost the runner %d MiB", 3*agent.MaxRecord>>20, (after.TotalAlloc-before.TotalAlloc)>>20)
		})
	}
}

// TestRecordsSkipsAnOverlongLine: a line past the limit is skipped whole;
// the records around it still arrive, as they were written.
func TestRecordsSkipsAnOverlongLine(t *testing.T) {
	var got []string
	in := io.MultiReader(strings.NewReader("first\n"), &endless{n: 300}, strings.NewReader("second\nlast"))
	c, err := agent.Records(in, 100, func(line []byte) pairbench.Cap {
		got = append(got, string(line))
		return ""
	})
	require.NoError(t, err)
	assert.Empty(t, c)
	assert.Equal(t, []string{"first\n", "second\n", "last"}, got)

	long := strings.Repeat("y", 200<<10) + "\n" // longer than the reader's buffer, under the limit
	got = nil
	_, err = agent.Records(strings.NewReader("a\n"+long+"b"), 1<<20, func(line []byte) pairbench.Cap {
		got = append(got, string(line))
		return ""
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"a\n", long, "b"}, got, "a long line under the limit arrives whole")

	c, err = agent.Records(strings.NewReader("a\nstop\nnever\n"), 100, func(line []byte) pairbench.Cap {
		if string(line) == "stop\n" {
			return pairbench.CapTurns
		}
		return ""
	})
	require.NoError(t, err)
	assert.Equal(t, pairbench.CapTurns, c, "a cap ends the reading")
}
