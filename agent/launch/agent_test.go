package launch_test

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// TestMain lets the test binary serve as the sandbox's init.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.RunInit(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// lines is an agent stream of plain lines: each is a turn, a tool call
// named by it, and the answer so far; a line "error: X" is the error.
type lines struct {
	w   io.Writer
	res runner.AgentResult
}

func (l *lines) Feed(r io.Reader) (pairbench.Cap, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		io.WriteString(l.w, line+"\n")
		l.res.Turns++
		if msg, ok := strings.CutPrefix(line, "error: "); ok {
			l.res.ErrorMessage, l.res.StopReason = msg, "error "+msg
			continue
		}
		l.res.Final = line
		l.res.Declared = append(l.res.Declared, "mcp__x__"+line)
		l.res.Calls = append(l.res.Calls, runner.ToolCall{Name: line})
	}
	return "", sc.Err()
}

func (l *lines) Result() runner.AgentResult { return l.res }

// TestRunRedactsWhatTheAgentPrints: an agent that prints a secret (here one
// put in its environment on purpose, as a leak would) in its output, its
// error and its diagnostics leaves it in none of what Run keeps: the
// transcript, the answer, the error, the tool names and stderr.
func TestRunRedactsWhatTheAgentPrints(t *testing.T) {
	realstack.Need(t, realstack.Bubblewrap)
	exe, err := os.Executable()
	require.NoError(t, err)
	const secret = "sk-real-provider-key-4b1d9e77"
	tmp := sandboxtest.TempDir(t)
	transcript := filepath.Join(t.TempDir(), "transcript.jsonl")
	script := `printf '%s\n' "answer $LEAKED" "error: bad key $LEAKED"; printf 'auth failed for %s\n' "$LEAKED" >&2`
	res, err := launch.Run(t.Context(), launch.Launch{
		Name: "fake",
		Task: runner.AgentTask{Caps: runner.Caps{Time: time.Minute}, TranscriptPath: transcript},
		Route: launch.Route{
			Allow:   []sandbox.AllowRule{{Host: "model.test", Ports: []int{443}}},
			Secrets: []sandbox.Secret{{Name: "MODEL_KEY", Value: secret, Hosts: []string{"model.test"}}},
		},
		Env: map[string]string{"LEAKED": secret},
		Policy: func(egress *sandbox.Egress, env map[string]string) sandbox.Policy {
			return sandbox.Policy{Env: env, Egress: egress, Executable: exe, TempRoot: tmp}
		},
		Configure: func(string, []runner.MCPServer) ([]string, error) {
			return []string{"/bin/sh", "-c", script}, nil
		},
		Stream:   func(w io.Writer, _ *launch.Meter) launch.Stream { return &lines{w: w} },
		TempRoot: tmp,
	})
	require.NoError(t, err)
	require.Equal(t, 2, res.Turns, "the agent ran and printed: %s", res.Stderr)

	kept, err := os.ReadFile(transcript)
	require.NoError(t, err)
	for what, text := range map[string]string{
		"transcript": string(kept), "answer": res.Final, "error": res.ErrorMessage, "stop reason": res.StopReason,
		"stderr": res.Stderr, "declared": strings.Join(res.Declared, ","), "call": res.Calls[0].Name,
	} {
		assert.NotContains(t, text, secret, "the %s holds the secret", what)
		assert.Contains(t, text, sandbox.Redacted, "the %s says where the secret was", what)
	}
	assert.Contains(t, res.Final, "answer ", "the rest of the answer is kept")
}
