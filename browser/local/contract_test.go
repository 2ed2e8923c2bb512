package local_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/browsertest"
	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/runner"
)

// TestProviderContract holds the local provider, with a spare per slot as
// benches run it, to the contract every provider passes.
func TestProviderContract(t *testing.T) {
	realstack.Need(t, realstack.Bubblewrap, realstack.Chromium)
	browsertest.Run(t, func(t *testing.T, hosts map[string]string) browsertest.Subject {
		dir := sandboxtest.TempDir(t)
		// The contract's stalled page runs out ParseTimeout twice; every
		// other page must parse within it on a slow, busy machine too.
		p, err := local.New(local.Config{Hosts: hosts, TempDir: dir, Spares: 1, ParseTimeout: 10 * time.Second, LoadTimeout: 2 * time.Minute,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
		t.Cleanup(func() { p.Close() })
		return browsertest.Subject{
			Browsers: p,
			Shutdown: func(context.Context) error { return p.Close() },
			Held: func() []string {
				// Each browser, spares too, holds a directory there until
				// its processes are gone.
				entries, err := os.ReadDir(dir)
				require.NoError(t, err)
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				return names
			},
			Unsupported: runner.BrowserSpec{Profile: "shopper"},
		}
	})
}
