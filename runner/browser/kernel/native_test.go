package kernel_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/examples/site"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/runner/browser/kernel"
	"github.com/pairbench/pairbench/runner/browser/kernel/kerneltest"
	"github.com/pairbench/pairbench/runner/browser/local"
	"github.com/pairbench/pairbench/runner/browser/remote"
)

// TestNativeWebMCPIsUsedAndRecorded benches on browsers with WebMCP built
// in, as Kernel's are (here Chromium with WebMCPTesting behind the fake):
// both arms' setups record it, treatment's tools register through it and
// run, and control stays tool-free. Browsers without it record false.
func TestNativeWebMCPIsUsedAndRecorded(t *testing.T) {
	srv := httptest.NewServer(site.New())
	t.Cleanup(srv.Close)
	hosts := map[string]string{}
	for _, h := range site.Hosts() {
		hosts[h] = strings.TrimPrefix(srv.URL, "http://")
	}
	reg, err := intents.Load("../../../examples/registry")
	require.NoError(t, err)
	tools := reg.Domain("books.example").Registered()

	for _, native := range []bool{true, false} {
		cfg := local.Config{Hosts: hosts, TempDir: sandboxtest.TempDir(t), Log: quiet}
		if native {
			cfg.Flags = []string{"--enable-features=WebMCPTesting"}
		}
		chromium, err := local.New(cfg)
		require.NoError(t, err)
		t.Cleanup(func() { chromium.Close() })
		fake := kerneltest.New(t, chromium)
		svc, err := kernel.New(kernel.Config{APIKey: fake.Key, BaseURL: fake.URL})
		require.NoError(t, err)
		p, err := remote.New(remote.Config{Service: svc, TempDir: sandboxtest.TempDir(t), Log: quiet,
			Connect: func(ctx context.Context, url string) (remote.Driver, error) {
				return local.Connect(ctx, local.Config{Log: quiet}, url)
			}})
		require.NoError(t, err)
		t.Cleanup(func() { p.Close(context.Background()) })

		treat, err := runner.SetUpBrowser(t.Context(), quiet, p, runner.SetupSpec{Arm: pairbench.Treatment,
			StartURL: "http://books.example/", Tools: tools, EntryTool: "find_books"})
		require.NoError(t, err, "native=%v", native)
		assert.Equal(t, native, treat.NativeWebMCP)
		res, err := treat.Browser.InvokeTool(t.Context(), "find_books", []byte(`{"query":"poetry"}`))
		require.NoError(t, err)
		assert.Empty(t, res.Exception, "native=%v", native)
		assert.True(t, res.Registered)
		require.NoError(t, treat.Browser.Close(t.Context()))

		ctl, err := runner.SetUpBrowser(t.Context(), quiet, p, runner.SetupSpec{Arm: pairbench.Control, StartURL: "http://books.example/"})
		require.NoError(t, err)
		assert.Equal(t, native, ctl.NativeWebMCP)
		live, err := ctl.Browser.LiveTools(t.Context())
		require.NoError(t, err)
		assert.Empty(t, live, "control is tool-free, native=%v", native)
		require.NoError(t, ctl.Browser.Close(t.Context()))
	}
}
