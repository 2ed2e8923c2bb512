package kernel_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/browser/kernel/kerneltest"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
)

// account is a site whose /api/me answers while the session holds.
type account struct {
	signedIn atomic.Bool
	checks   atomic.Int32
	addr     string
}

func newAccount(t *testing.T) *account {
	a := &account{}
	a.signedIn.Store(true)
	mux := http.NewServeMux()
	mux.HandleFunc("account.test/{$}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<!doctype html><title>Orders</title><h1>Your orders</h1>`)
	})
	mux.HandleFunc("account.test/api/me", func(w http.ResponseWriter, r *http.Request) {
		a.checks.Add(1)
		if !a.signedIn.Load() {
			http.Error(w, `{"error":"not signed in"}`, http.StatusUnauthorized)
			return
		}
		io.WriteString(w, `{"user":"ada"}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	a.addr = strings.TrimPrefix(srv.URL, "http://")
	return a
}

// tool reads a tool file's source for account.test.
func accountTool(t *testing.T, src string) intents.Tool {
	tool, err := intents.EvalTool(src, intents.ToolLimits{})
	require.NoError(t, err)
	tool.Path, tool.URLPatterns = tool.Name+".js", []string{"http://account.test/*"}
	return tool
}

const whoamiJS = `({
  name: "whoami",
  description: "The signed-in user.",
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: true },
  async execute() {
    const r = await fetch("/api/me");
    if (!r.ok) throw new Error("not signed in (HTTP " + r.status + ")");
    return await r.json();
  },
});`

const ordersJS = `({
  name: "list_orders",
  description: "The account's orders.",
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: true },
  async execute() { return [{ id: 1 }]; },
});`

// TestSignedInCheckInBothArms runs the signed-in check in every setup of
// both arms on Kernel browsers loading the domain's profile: control stays
// tool-free, and once the session lapses the setup aborts on its first
// browser, with the check's reason, without trying more.
func TestSignedInCheckInBothArms(t *testing.T) {
	site := newAccount(t)
	fake := kerneltest.Start(t, map[string]string{"account.test": site.addr}, nil, "ada")
	p := newProvider(t, fake)

	check := accountTool(t, whoamiJS)
	tools := []intents.Tool{check, accountTool(t, ordersJS)}
	spec := func(arm pairbench.Arm) runner.SetupSpec {
		s := runner.SetupSpec{Arm: arm, StartURL: "http://account.test/", Browser: runner.BrowserSpec{Profile: "ada"}, SignedInCheck: &check}
		if arm == pairbench.Treatment {
			s.Tools, s.EntryTool = tools, "list_orders"
		}
		return s
	}

	for _, arm := range []pairbench.Arm{pairbench.Control, pairbench.Treatment} {
		before := site.checks.Load()
		setup, err := runner.SetUpBrowser(t.Context(), quiet, p, spec(arm))
		require.NoError(t, err, arm)
		assert.Equal(t, "whoami", setup.SignedIn, arm)
		assert.Equal(t, before+1, site.checks.Load(), "%s: the check ran once, on the start page", arm)
		live, err := setup.Browser.LiveTools(t.Context())
		require.NoError(t, err)
		if arm == pairbench.Control {
			assert.Empty(t, live, "the check leaves control tool-free")
		} else {
			assert.Len(t, live, 2)
		}
		require.NoError(t, setup.Browser.Close(t.Context()))
	}
	for _, c := range fake.Creates() {
		require.NotNil(t, c.Profile)
		assert.Equal(t, "ada", c.Profile.Name)
		assert.False(t, c.Profile.SaveChanges)
	}

	// The session lapses midway: both arms abort on their first browser.
	site.signedIn.Store(false)
	for _, arm := range []pairbench.Arm{pairbench.Control, pairbench.Treatment} {
		creates := len(fake.Creates())
		_, err := runner.SetUpBrowser(t.Context(), quiet, p, spec(arm))
		var se *runner.SetupError
		require.ErrorAs(t, err, &se, arm)
		assert.True(t, se.SignedOut)
		assert.Len(t, se.Failures, 1, "%s: no other browser is tried", arm)
		assert.Contains(t, se.Reason(), "signed-in check whoami failed on http://account.test/")
		assert.Contains(t, se.Reason(), "not signed in (HTTP 401)")
		assert.Equal(t, creates+1, len(fake.Creates()))
	}
	require.Eventually(t, func() bool { return len(fake.Live()) == 0 }, 10*time.Second, 50*time.Millisecond, "every browser is deleted")
}
