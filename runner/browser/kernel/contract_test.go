package kernel_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/runner/browser/browsertest"
	"github.com/pairbench/pairbench/runner/browser/kernel"
	"github.com/pairbench/pairbench/runner/browser/kernel/kerneltest"
	"github.com/pairbench/pairbench/runner/browser/local"
	"github.com/pairbench/pairbench/runner/browser/remote"
)

// TestProviderContract holds Kernel browsers, through the fake Kernel, to
// the contract every provider passes.
func TestProviderContract(t *testing.T) {
	browsertest.Run(t, func(t *testing.T, hosts map[string]string) browsertest.Subject {
		chromiumDir, relayDir := sandboxtest.TempDir(t), sandboxtest.TempDir(t)
		chromium, err := local.New(local.Config{Hosts: hosts, TempDir: chromiumDir, Log: quiet})
		require.NoError(t, err)
		t.Cleanup(func() { chromium.Close() })
		fake := kerneltest.New(t, chromium, "shopper")
		svc, err := kernel.New(kernel.Config{APIKey: fake.Key, BaseURL: fake.URL})
		require.NoError(t, err)
		p, err := remote.New(remote.Config{Service: svc, TempDir: relayDir, Log: quiet,
			Connect: func(ctx context.Context, url string) (remote.Driver, error) {
				return local.Connect(ctx, local.Config{Log: quiet, ParseTimeout: time.Second, LoadTimeout: 5 * time.Second}, url)
			}})
		require.NoError(t, err)
		t.Cleanup(func() { p.Close(context.Background()) })
		return browsertest.Subject{
			Browsers: p,
			Shutdown: p.Close,
			Held: func() []string {
				held := append(fake.Live(), p.Live()...)
				for _, dir := range []string{chromiumDir, relayDir} {
					entries, err := os.ReadDir(dir)
					require.NoError(t, err)
					for _, e := range entries {
						held = append(held, e.Name())
					}
				}
				return held
			},
			SlowOpens:   func() { fake.SetFaults(kerneltest.Faults{CreateDelay: 1500 * time.Millisecond}) },
			Unsupported: runner.BrowserSpec{Profile: "nobody"},
		}
	})
}
