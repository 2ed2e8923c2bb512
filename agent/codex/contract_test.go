package codex_test

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/agent/agenttest"
	"github.com/pairbench/pairbench/agent/codex"
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

// TestContract runs the agent contract against the real Codex.
func TestContract(t *testing.T) {
	tools := agenttest.Tools(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	agenttest.Run(t, agenttest.Adapter{
		New: func(t testing.TB, hostEnv []string, tmp string, network launch.Network) runner.Agent {
			a, err := codex.New(codex.Config{Binary: tools.Path(codex.Binary),
				ExtraPackages: append([]string{tools.Node()}, tools.PlaywrightPackages()...),
				HostEnv:       hostEnv, Network: network, Executable: exe, TempRoot: tmp})
			require.NoError(t, err)
			return a
		},
		Missing: func() error {
			_, err := codex.New(codex.Config{Binary: "/nonexistent/codex"})
			return err
		},
		Provider: "openai", KeyEnv: "OPENAI_API_KEY", KeyHeader: "Authorization",
		Stream:       func(caps runner.Caps, m rundir.Model) launch.Stream { return both{codex.NewStream(caps, m, nil)} },
		Output:       `2026-12-01T00:00:00Z TRACE codex_http_client::transport: POST to http://127.0.0.1:1/v1/responses: {"model":"m","tools":[]}`,
		HarnessTools: codex.HarnessTools,
	})
}

// both feeds one input to Codex's two parsers: its events and its traces.
type both struct{ *codex.Stream }

func (b both) Feed(r io.Reader) (pairbench.Cap, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	if c := b.Diagnostics(strings.NewReader(string(data)), io.Discard); c != "" {
		return c, nil
	}
	return b.Stream.Feed(strings.NewReader(string(data)))
}
