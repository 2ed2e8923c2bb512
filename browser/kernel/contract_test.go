package kernel_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/browsertest"
	"github.com/pairbench/pairbench/browser/kernel/kerneltest"
	"github.com/pairbench/pairbench/browser/remote"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/runner"
)

// TestProviderContract holds Kernel browsers, through the fake Kernel, to
// the contract every provider passes.
func TestProviderContract(t *testing.T) {
	browsertest.Run(t, func(t *testing.T, hosts map[string]string) browsertest.Subject {
		fake := kerneltest.Start(t, hosts, nil, "shopper")
		relayDir := sandboxtest.TempDir(t)
		p := newProvider(t, fake, func(c *remote.Config) { c.TempDir = relayDir })
		return browsertest.Subject{
			Browsers: p,
			Shutdown: p.Close,
			Held: func() []string {
				held := append(fake.Live(), p.Live()...)
				entries, err := os.ReadDir(relayDir) // the agents' relay sockets
				require.NoError(t, err)
				for _, e := range entries {
					held = append(held, e.Name())
				}
				return held
			},
			SlowOpens:   func() { fake.SetFaults(kerneltest.Faults{CreateDelay: 1500 * time.Millisecond}) },
			Unsupported: runner.BrowserSpec{Profile: "nobody"},
		}
	})
}
