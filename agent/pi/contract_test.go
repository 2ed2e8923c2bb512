package pi_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/agent/agenttest"
	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/agent/pi"
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

// TestContract runs the agent contract against the real pi.
func TestContract(t *testing.T) {
	tools := agenttest.Tools(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	agenttest.Run(t, agenttest.Adapter{
		New: func(t testing.TB, hostEnv []string, tmp string, network launch.Network) runner.Agent {
			a, err := pi.New(pi.Config{Node: tools.Node(), Package: tools.Path(pi.Package), ExtraPackages: tools.PlaywrightPackages(),
				HostEnv: hostEnv, Network: network, Executable: exe, TempRoot: tmp})
			require.NoError(t, err)
			t.Cleanup(func() { a.Close() })
			return a
		},
		Missing: func() error {
			_, err := pi.New(pi.Config{Node: tools.Node(), Package: "/nonexistent/pi"})
			return err
		},
		Provider: "openai", KeyEnv: "OPENAI_API_KEY", KeyHeader: "Authorization",
		Stream: func(caps runner.Caps, _ rundir.Model) launch.Stream { return pi.NewStream(caps, nil) },
		Output: `{"type":"turn_start"}`,
		Warm: func(t testing.TB, a runner.Agent, mcp runner.BrowserMCPFunc) {
			require.NoError(t, a.(*pi.Agent).Warm(context.Background(), mcp("ws://127.0.0.1:9/warm-up")), "as pairbench run does")
		},
	})
}
