package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/driver"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// ServeDevTools relays the websocket request r to the DevTools of b, a
// browser of the local provider (reached on its DevTools socket), whatever
// path r asked for: what a fake cloud service's websocket endpoint does
// for the browser behind it.
func ServeDevTools(w http.ResponseWriter, r *http.Request, b runner.Browser) {
	tr := devToolsTransport(b.DevTools())
	defer tr.CloseIdleConnections()
	path, err := browserPath(r.Context(), tr)
	if err != nil {
		http.Error(w, "browser unreachable: "+err.Error(), http.StatusBadGateway)
		return
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = &url.URL{Scheme: "http", Host: devToolsHost, Path: path}
			pr.Out.Host = ""
		},
		Transport: tr,
	}
	proxy.ServeHTTP(w, r)
}

// devToolsHost is the host a DevTools request names: Chromium answers
// requests for an IP address or localhost only.
const devToolsHost = "127.0.0.1:9222"

// devToolsTransport dials dt: its socket when it has one, else its URL's
// host.
func devToolsTransport(dt runner.DevTools) *http.Transport {
	if dt.Socket == "" {
		return &http.Transport{}
	}
	return &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return sandbox.DialUnix(ctx, dt.Socket)
	}}
}

// browserPath reads the browser's websocket path from its /json/version.
func browserPath(ctx context.Context, tr http.RoundTripper) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+devToolsHost+"/json/version", nil)
	if err != nil {
		return "", err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v struct {
		URL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.URL == "" {
		return "", fmt.Errorf("no webSocketDebuggerUrl in %q", b)
	}
	u, err := url.Parse(v.URL)
	if err != nil {
		return "", err
	}
	return u.Path, nil
}

// DialDevTools connects a CDP client to a browser the way the trial's agent
// does: through a loopback port relayed to DevTools.Socket (what the
// agent's sandbox does), or at DevTools.URL itself. The connection is
// closed at the test's end.
func DialDevTools(t testing.TB, dt runner.DevTools) *driver.Browser {
	t.Helper()
	endpoint := dt.URL
	if dt.Socket != "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		go relaySocket(l, dt.Socket)
		u, err := url.Parse(dt.URL)
		require.NoError(t, err)
		u.Host = l.Addr().String()
		endpoint = u.String()
	}
	if u, err := url.Parse(endpoint); err == nil && u.Scheme == "http" {
		// An http endpoint names its websocket in /json/version.
		path, err := browserPath(t.Context(), hostTransport(u.Host))
		require.NoError(t, err)
		endpoint = "ws://" + u.Host + path
	}
	b, err := driver.Connect(t.Context(), driver.Config{}, endpoint)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close(context.Background()) })
	return b
}

// hostTransport sends every request to host, whatever the URL names.
func hostTransport(host string) *http.Transport {
	return &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, host)
	}}
}

// relaySocket relays each connection on l to the unix socket.
func relaySocket(l net.Listener, socket string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := sandbox.DialUnix(context.Background(), socket)
			if err != nil {
				return
			}
			defer u.Close()
			go io.Copy(u, c)
			io.Copy(c, u)
		}()
	}
}
