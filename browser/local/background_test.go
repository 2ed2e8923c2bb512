package local

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// egressTargets is a slog handler that keeps the host of every
// destination the browser's egress logs: what it relayed (Debug), what
// failed upstream and what it refused (Warn).
type egressTargets struct {
	mu    sync.Mutex
	hosts map[string][]string // host -> the messages naming it
}

func (h *egressTargets) Enabled(context.Context, slog.Level) bool { return true }
func (h *egressTargets) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *egressTargets) WithGroup(string) slog.Handler            { return h }

func (h *egressTargets) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		host := ""
		switch a.Key {
		case "target":
			host, _, _ = net.SplitHostPort(a.Value.String())
		case "host":
			host = a.Value.String()
		}
		if host != "" {
			h.mu.Lock()
			h.hosts[host] = append(h.hosts[host], r.Message)
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

func (h *egressTargets) seen() map[string][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string][]string{}
	for k, v := range h.hosts {
		out[k] = slices.Clone(v)
	}
	return out
}

// TestChromiumAsksForNothingThePageDidNot counts the egress log of a
// trial's browser, started as trials start it (its sandbox, its policy,
// its switches, its web egress): it loads pages, runs their tools, fails
// to reach a name that does not resolve and an HTTPS site that is not one,
// and lives 15 s, longer than most trials. Every destination in the log
// must be one the pages asked for. On a4d171d Chromium asked
// update.googleapis.com for its on-device model manifest at every start,
// on ports 443 and 80 (two Warn lines per trial in the runner's log,
// 92 in the demo), whatever --disable-component-update and the
// ComponentUpdatesEnabled policy said.
func TestChromiumAsksForNothingThePageDidNot(t *testing.T) {
	site := testsite.New(t)
	log := &egressTargets{hosts: map[string][]string{}}
	start := time.Now()
	b := openBrowser(t, newProvider(t, site, func(c *Config) { c.Log = slog.New(log) }))
	ctx, cancel := context.WithTimeout(context.Background(), testsite.Patience)
	defer cancel()

	require.NoError(t, b.RegisterTools(ctx, testsite.BookTools(t)))
	_, err := b.Load(ctx, "http://books.test/")
	require.NoError(t, err)
	_, err = b.InvokeTool(ctx, "find_books", []byte(`{"author":"Ada"}`))
	require.NoError(t, err)
	_, err = b.Load(ctx, "http://weather.test/")
	require.NoError(t, err)
	b.Navigate(ctx, "http://nowhere.test/")   // does not resolve
	b.Navigate(ctx, "https://books.test:80/") // a plain HTTP server: the TLS handshake fails
	time.Sleep(time.Until(start.Add(15 * time.Second)))

	asked := []string{"books.test", "weather.test", "nowhere.test"}
	seen := log.seen()
	require.Contains(t, seen, "books.test", "control: the egress log names what the pages asked for")
	for host, msgs := range seen {
		assert.Contains(t, asked, host, "Chromium asked the egress for %s, which no page did: %v", host, msgs)
	}
}
