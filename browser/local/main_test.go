package local

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/internal/offline"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/sandbox"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary stand in for pairbench's own binary: the
// sandbox's init inside the browser's and the agent's sandboxes, and the
// raw CDP client the escape tests run inside an agent's sandbox. The tests
// run in a network namespace with loopback only (offline.Main), so no
// browser they start reaches beyond this machine whatever its egress
// allows.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case sandbox.InitArg:
			os.Exit(sandbox.RunInit(os.Args[2:]))
		case attackArg:
			os.Exit(runAttack(os.Args[2:]))
		}
	}
	offline.Main(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newProvider returns a provider for the site whose timeouts are all
// testsite.Patience: a page that must load loads, however slow the
// machine.
func newProvider(t testing.TB, site *testsite.Site, mutate ...func(*Config)) *Provider {
	t.Helper()
	realstack.Need(t, realstack.Bubblewrap, realstack.Chromium)
	cfg := Config{
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
	p, err := New(cfg)
	require.NoError(t, err)
	return p
}

// openBrowser opens a browser that the test closes at its end.
func openBrowser(t testing.TB, p *Provider) *Browser {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testsite.Patience)
	defer cancel()
	b, err := p.Open(context.Background(), runnerSpec())
	require.NoError(t, err)
	t.Cleanup(func() { b.Close(ctx) })
	return b.(*Browser)
}
