package driver

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/internal/offline"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// TestMain lets the test binary stand in for pairbench's own binary as the
// sandbox's init inside the browsers' sandboxes. The tests run in a
// network namespace with loopback only (offline.Main), so no browser they
// start reaches beyond this machine whatever its egress allows.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.RunInit(os.Args[2:]))
	}
	offline.Main(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newProvider returns a local provider for the site whose timeouts are all
// testsite.Patience: a page that must load loads, however slow the
// machine.
func newProvider(t testing.TB, site *testsite.Site, mutate ...func(*LocalConfig)) runner.Browsers {
	t.Helper()
	realstack.Need(t, realstack.Bubblewrap, realstack.Chromium)
	cfg := LocalConfig{
		Hosts:        site.Hosts(),
		Resolver:     testsite.Resolver,
		TempDir:      sandboxtest.TempDir(t),
		StartTimeout: testsite.Patience,
		ParseTimeout: testsite.Patience,
		LoadTimeout:  testsite.Patience,
		Log:          quiet,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	return NewLocal(t, cfg)
}

// openBrowser opens a browser that the test closes at its end, and
// returns its driver.
func openBrowser(t testing.TB, p runner.Browsers) *Browser {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testsite.Patience)
	defer cancel()
	b, err := p.Open(context.Background(), runner.BrowserSpec{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close(ctx) })
	return Driven(b)
}
