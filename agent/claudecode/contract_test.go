package claudecode_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/agent/agenttest"
	"github.com/pairbench/pairbench/agent/claudecode"
	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/internal/offline"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// TestMain lets the test binary serve as the sandbox's init, as pairbench's
// own binary does. The contract suite's trials start Chromium: the tests
// run in a network namespace with loopback only (offline.Main).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.RunInit(os.Args[2:]))
	}
	offline.Main(m)
}

// TestContract runs the agent contract against the real Claude Code.
func TestContract(t *testing.T) {
	tools := agenttest.Tools(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	agenttest.Run(t, agenttest.Adapter{
		New: func(t testing.TB, hostEnv []string, tmp string, network launch.Network) runner.Agent {
			a, err := claudecode.New(claudecode.Config{Binary: tools.Path(claudecode.Binary),
				ExtraPackages: append([]string{tools.Node()}, tools.PlaywrightPackages()...),
				HostEnv:       hostEnv, Network: network, Executable: exe, TempRoot: tmp})
			require.NoError(t, err)
			return a
		},
		Missing: func() error {
			_, err := claudecode.New(claudecode.Config{Binary: "/nonexistent/claude"})
			return err
		},
		Provider: "anthropic", KeyEnv: "ANTHROPIC_API_KEY", KeyHeader: "x-api-key",
		Stream: func(caps runner.Caps, m rundir.Model) launch.Stream { return claudecode.NewStream(caps, m, nil) },
		Output: `{"type":"assistant","message":{"id":"msg_1","model":"pairbench-scripted","role":"assistant","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":3,"output_tokens":1}}}`,
	})
}
