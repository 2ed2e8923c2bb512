package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/agent"
	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
)

// TestBadAgentInputIsOneLine: an unknown agent, a model the agent cannot
// take and a missing key are each one line on stderr and exit 2, and
// nothing is written, for run and demo alike.
func TestBadAgentInputIsOneLine(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("CLAUDE_CODE_OAUTH_TOKEN", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--agent", "aider"}, `unknown agent "aider"; want one of pi, claude-code, codex`},
		{[]string{"--agent", "claude-code", "--model", "openai/gpt-5"}, "claude-code speaks only the Anthropic Messages API"},
		{[]string{"--agent", "codex", "--model", "anthropic/claude-sonnet-4-5"}, "codex speaks only the OpenAI Responses API"},
		{[]string{"--agent", "codex", "--model", "openai/gpt-5"}, "model openai/gpt-5: OPENAI_API_KEY is not set"},
		{[]string{"--agent", "claude-code", "--model", "anthropic/claude-sonnet-4-5"}, "neither ANTHROPIC_API_KEY nor CLAUDE_CODE_OAUTH_TOKEN is set"},
		{[]string{"--model", "openai/gpt-5"}, "model openai/gpt-5: OPENAI_API_KEY is not set"},
	} {
		for _, cmd := range [][]string{{"run", exampleRegistry}, {"demo", "--registry", exampleRegistry}} {
			runs := t.TempDir()
			args := append(append(cmd, "--runs-dir", runs, "--run-id", "x"), c.args...)
			code, stdout, stderr := runCLI(t, args...)
			assert.Equal(t, exitUsage, code, "%v: %s", args, stderr)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "%v: one line: %q", args, stderr)
			assert.Contains(t, stderr, c.want, "%v", args)
			assert.Empty(t, stdout)
			entries, err := os.ReadDir(runs)
			require.NoError(t, err)
			assert.Empty(t, entries, "%v: nothing is written", args)
		}
	}
}

// TestDemoWithEachAgent runs `pairbench demo` end to end with Claude Code
// and with Codex (pi is the default every other bench test runs): a real
// bench of one intent with the real CLI in the sandbox, the scripted model
// speaking the agent's API. run.json freezes the agent's name and version,
// the verdict names it, and a resume with another agent is refused, even
// with --force, leaving the run as it was.
func TestDemoWithEachAgent(t *testing.T) {
	tools := clitest.RealStack(t)
	for _, name := range []string{"claude-code", "codex"} {
		t.Run(name, func(t *testing.T) {
			runs := t.TempDir()
			// The agent contracts' roomy time cap (agenttest): the demo's
			// two minutes abort a trial on a machine many times busier.
			args := []string{"demo", "--registry", exampleRegistry, "--tools", tools, "--runs-dir", runs, "--run-id", "d1",
				"--intent", "books-cheapest-by-author", "--pairs", "2", "--slots", "2", "--seed", "5", "--time-cap", "600",
				"--agent", name}
			code, stdout, stderr := runCLI(t, args...)
			require.Equal(t, exitOK, code, stderr)

			version, err := launch.PackageVersion(agent.Package(name, launch.Tools{NodeModules: tools}))
			require.NoError(t, err)
			require.NotEmpty(t, version)
			dir := rundir.RunDir{Path: filepath.Join(runs, "d1")}
			plan, err := dir.ReadPlan()
			require.NoError(t, err)
			assert.Equal(t, name, plan.Versions.AgentName)
			assert.Equal(t, version, plan.Versions.Agent, "the installed version is frozen")
			assert.Equal(t, runner.PricesVersion, plan.Prices)
			for _, h := range agent.HarnessTools(name) {
				assert.Contains(t, plan.Allowlist, h, "the CLI's harness tools join the allowlist")
			}

			// Every trial scored once, correct; an attempt that aborted on
			// a busy machine (its pair ran again whole, so a first arm
			// scored before the second aborted is scored again) is not the
			// agent's doing.
			rows := clitest.ReadRows(t, dir.File("rows.jsonl"))
			aborted := map[[2]int]bool{}
			for _, r := range rows {
				if !r.Outcome.Scored() {
					aborted[[2]int{r.Pair, r.Attempt}] = true
				}
			}
			scored := map[string]bool{}
			for _, r := range rows {
				if !r.Outcome.Scored() || aborted[[2]int{r.Pair, r.Attempt}] {
					continue
				}
				key := fmt.Sprintf("%s pair %d", r.Arm, r.Pair)
				assert.False(t, scored[key], "%s is scored once", key)
				scored[key] = true
				assert.Equal(t, pairbench.Correct, r.Outcome, "%s: %s", key, r.Reason)
				assert.Positive(t, r.CostUSD, "every trial is priced")
				if r.Arm == pairbench.Treatment {
					assert.True(t, r.Adopted, "treatment used the page's tool")
				}
			}
			assert.Len(t, scored, 4, "2 pairs × 2 arms")
			tag := name + " " + version
			assert.Contains(t, stdout, "agent `"+tag+"`", "the verdict names the agent")
			var rep struct {
				Model struct{ Agent string } `json:"model"`
			}
			b, err := os.ReadFile(dir.File("report.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &rep))
			assert.Equal(t, tag, rep.Model.Agent)

			before, err := os.ReadFile(dir.File(rundir.PlanFile))
			require.NoError(t, err)
			for _, other := range [][]string{{"--agent", "pi"}, {"--agent", "pi", "--force"}} {
				code, _, stderr = runCLI(t, append(args[:len(args)-2:len(args)-2], other...)...)
				assert.Equal(t, exitFailure, code, stderr)
				assert.Contains(t, stderr, "run d1 is benched with "+name+", not pi; resume it with --agent "+name)
			}
			after, err := os.ReadFile(dir.File(rundir.PlanFile))
			require.NoError(t, err)
			assert.Equal(t, string(before), string(after), "the refused resume changed nothing")
			assert.Equal(t, rows, clitest.ReadRows(t, dir.File("rows.jsonl")), "the refused resume ran no trial")
		})
	}
}

// packageVersion reads the version an installed npm package declares.
