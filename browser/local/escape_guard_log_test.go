package local

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/sandbox"
)

// TestDevToolsGuardKeepsTheRunnersLogSmall is issue 28's hostile DevTools
// client against a real browser's guard, on the socket the agent's sandbox
// is relayed to: refused commands with a 1 MiB sessionId, 2,000 refused
// commands, 2,000 refused HTTP requests with 8 KiB paths, and a
// continuation frame whose length wraps the size check. A real run's guard
// wrote 25.6 MB of runner log in 44 s this way, a line per refusal, and
// the wrapped length panicked its handler (a stack in the log). The whole
// browser's log stays under 1 MB now, the guard closes the wrapping
// connection with a named reason, and a client keeps being served.
func TestDevToolsGuardKeepsTheRunnersLogSmall(t *testing.T) {
	site := testsite.New(t)
	log := &logCount{}
	b := openBrowser(t, newProvider(t, site, func(c *Config) { c.Log = slog.New(slog.NewTextHandler(log, nil)) }))

	ws := dialRawWS(t, b, "", nil)
	huge := strings.Repeat("S", 1<<20)
	for i := range 20 {
		m, err := ws.call(int64(i), huge, "Extensions.loadUnpacked", map[string]any{"path": "/tmp"})
		require.NoError(t, err)
		require.NotNil(t, m.Error, "Extensions.loadUnpacked is refused")
	}
	var batch strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&batch, "%s", textFrame(fmt.Sprintf(`{"id":%d,"method":"Target.createBrowserContext","sessionId":"s%d","params":{"proxyServer":"http://10.0.0.1"}}`, 100+i, i)))
	}
	// Written while the answers are read: the guard answers as it reads,
	// and stops reading while its answers wait.
	written := make(chan error, 1)
	go func() { written <- ws.write([]byte(batch.String())) }()
	for i := range 2000 {
		m, err := ws.await(int64(100 + i))
		require.NoError(t, err)
		require.NotNil(t, m.Error, "a browser context with its own proxy is refused")
	}
	require.NoError(t, <-written)

	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return sandbox.DialUnix(ctx, b.DevTools().Socket)
	}}}
	for i := range 2000 {
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:9222/json/new?%d%s", i, strings.Repeat("u", 8<<10)))
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
	}

	wrapped := dialRawWS(t, b, "", nil)
	require.NoError(t, wrapped.write(wrappedContinuation()))
	_, err := wrapped.read()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1009", "closed with a close code")
	assert.Contains(t, err.Error(), "a message over 67108864 bytes", "and a named reason")

	m, err := dialRawWS(t, b, "", nil).call(1, "", "Target.getTargets", map[string]any{})
	require.NoError(t, err)
	assert.Nil(t, m.Error, "the guard still serves")

	require.NoError(t, b.Close(t.Context())) // the guard logs the refusals it only counted
	t.Logf("the browser's log: %s; its last lines:\n%s", log, lastLines(log.text.String(), 4))
	assert.Less(t, log.bytes, 1<<20, "the runner's log")
	assert.False(t, strings.Contains(log.text.String(), "panic"), "a panic in the runner's log")
	// 4,021 refusals (and a connection the browser's close ended, say):
	// the last line counts them all.
	total := regexp.MustCompile(`refusals not logged one by one" more=\d+ total=(\d+)`).FindStringSubmatch(lastLines(log.text.String(), 1))
	require.Len(t, total, 2, "the log says how many refusals there were")
	n, _ := strconv.Atoi(total[1])
	assert.GreaterOrEqual(t, n, 4021)
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
