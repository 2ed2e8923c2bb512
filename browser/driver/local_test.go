package driver_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/browsertest"
	"github.com/pairbench/pairbench/browser/driver"
	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/runner"
)

// The package's tests open their browsers with the local provider (see
// export_test.go).
func init() {
	driver.NewLocal = func(t testing.TB, c driver.LocalConfig) runner.Browsers {
		p, err := local.New(local.Config{
			Hosts: c.Hosts, Resolver: c.Resolver, TempDir: c.TempDir, Executable: c.Executable,
			Flags: c.Flags, WebMCP: c.WebMCP, CACerts: c.CACerts, Log: c.Log,
			StartTimeout: c.StartTimeout, ParseTimeout: c.ParseTimeout, LoadTimeout: c.LoadTimeout,
		})
		require.NoError(t, err)
		return p
	}
	driver.Driven = func(b runner.Browser) *driver.Browser { return b.(*local.Browser).Browser }
	driver.ReadCACerts = local.ReadCACerts
	driver.DevToolsOnLoopback = func(t testing.TB, b runner.Browser) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			browsertest.ServeDevTools(w, r, b)
		}))
		t.Cleanup(srv.Close)
		return "ws://" + srv.Listener.Addr().String() + "/devtools/browser/relayed"
	}
}
