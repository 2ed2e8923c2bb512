package kernel_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/browsertest"
	"github.com/pairbench/pairbench/browser/driver"
	"github.com/pairbench/pairbench/browser/kernel"
	"github.com/pairbench/pairbench/browser/kernel/kerneltest"
	"github.com/pairbench/pairbench/browser/remote"
	"github.com/pairbench/pairbench/examples/site"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/internal/offline"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// TestMain runs the tests without a route out (Chromium stays offline), and
// lets the test binary be the sandbox's init inside the fake's browsers.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.RunInit(os.Args[2:]))
	}
	offline.Main(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fixture is a fake Kernel whose browsers reach the example sites, and a
// provider of Kernel browsers pointed at it.
type fixture struct {
	fake     *kerneltest.Server
	provider *remote.Provider
	tools    []intents.Tool
}

func newFixture(t *testing.T, mutate ...func(*remote.Config)) *fixture {
	t.Helper()
	fake := kerneltest.Start(t, exampleHosts(t), nil, "shopper")
	reg, err := intents.Load("../../examples/registry")
	require.NoError(t, err)
	return &fixture{fake: fake, provider: newProvider(t, fake, mutate...), tools: reg.Domain("books.example").Registered()}
}

// exampleHosts serves the example sites on loopback and maps their hosts.
func exampleHosts(t *testing.T) map[string]string {
	srv := httptest.NewServer(site.New())
	t.Cleanup(srv.Close)
	hosts := map[string]string{}
	for _, h := range site.Hosts() {
		hosts[h] = strings.TrimPrefix(srv.URL, "http://")
	}
	return hosts
}

// newProvider is a provider of Kernel browsers from fake, shut down at the
// test's end.
func newProvider(t *testing.T, fake *kerneltest.Server, mutate ...func(*remote.Config)) *remote.Provider {
	t.Helper()
	svc, err := kernel.New(kernel.Config{APIKey: fake.Key, BaseURL: fake.URL})
	require.NoError(t, err)
	cfg := remote.Config{
		Service: svc,
		Driver:  remoteDriverConfig,
		TempDir: sandboxtest.TempDir(t),
		Log:     quiet,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	p, err := remote.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p.Close(ctx)
	})
	return p
}

func TestKernelBrowserRegistersLoadsAndIsDeleted(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	b, err := f.provider.Open(ctx, runner.BrowserSpec{Stealth: true, Profile: "shopper"})
	require.NoError(t, err)
	require.Len(t, f.fake.Live(), 1)

	require.NoError(t, b.RegisterTools(ctx, f.tools))
	load, err := b.Load(ctx, "http://books.example/")
	require.NoError(t, err)
	assert.Equal(t, "http://books.example/", load.URL)
	live, err := b.LiveTools(ctx)
	require.NoError(t, err)
	var names []string
	for _, tool := range live {
		assert.True(t, tool.Registered, tool.Name)
		names = append(names, tool.Name)
	}
	assert.Contains(t, names, "find_books")

	// The agent's way in: the relay socket, never Kernel's URL.
	dt := b.DevTools()
	assert.NotContains(t, dt.URL, "jwt")
	assert.NotEmpty(t, dt.Socket)
	agent := browsertest.DialDevTools(t, dt)
	agentLive, err := agent.LiveTools(ctx)
	require.NoError(t, err)
	assert.Len(t, agentLive, len(live), "the relay reaches the same browser")

	creates := f.fake.Creates()
	require.Len(t, creates, 1)
	assert.True(t, creates[0].Stealth)
	assert.True(t, creates[0].Headless)
	require.NotNil(t, creates[0].Profile)
	assert.Equal(t, "shopper", creates[0].Profile.Name)
	assert.False(t, creates[0].Profile.SaveChanges, "a profile is loaded without saving changes")

	require.NoError(t, b.Close(ctx))
	require.NoError(t, b.Close(ctx), "Close twice")
	assert.Empty(t, f.fake.Live())
	assert.Empty(t, f.provider.Live())
	assert.Empty(t, f.fake.BadKeys())
}

// remoteDriverConfig is how the tests' providers drive a remote browser:
// the contract's stalled page runs ParseTimeout out twice, so it stays
// short, while the start (the DevTools handshake) and a load may take long
// on a busy machine (a 1 s parse and 5 s load bound, and the default start
// bound, failed there).
var remoteDriverConfig = driver.Config{Log: quiet, StartTimeout: 2 * time.Minute, ParseTimeout: 10 * time.Second, LoadTimeout: 2 * time.Minute}
