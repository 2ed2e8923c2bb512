package sandbox

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const egressRealKey = "sk-real-0123456789-never-in-the-sandbox"

// egressFixture is the usual setup: two TLS upstreams on loopback named
// model.test (which carries the secret) and other.test, both allowed on
// their ports, plus a plain-http model upstream.
type egressFixture struct {
	e                  *Egress
	model, other, http *testUpstream
	ph                 string
}

func (f *egressFixture) modelURL(path string) string {
	return "https://model.test:" + strconv.Itoa(f.model.port) + path
}

func (f *egressFixture) otherURL(path string) string {
	return "https://other.test:" + strconv.Itoa(f.other.port) + path
}

func newEgressFixture(t *testing.T, h http.HandlerFunc) *egressFixture {
	t.Helper()
	upCA, roots := newTestAuthority(t)
	f := &egressFixture{
		model: newTestUpstream(t, upCA, h),
		other: newTestUpstream(t, upCA, nil),
		http:  newTestUpstream(t, nil, nil),
	}
	f.e = startEgress(t, EgressConfig{
		Allow: []AllowRule{
			{Host: "model.test", Ports: []int{f.model.port, f.http.port}},
			{Host: "*.other.test", Ports: []int{f.other.port}},
			{Host: "other.test", Ports: []int{f.other.port}},
		},
		Secrets:            []Secret{{Name: "MODEL_API_KEY", Value: egressRealKey, Hosts: []string{"model.test"}}},
		AllowLoopbackHosts: []string{"model.test", "other.test"},
		Resolver: mapResolver{
			"model.test":        loopback4,
			"other.test":        loopback4,
			"internal.test":     {netip.MustParseAddr("10.1.2.3")},
			"meta.test":         {netip.MustParseAddr("169.254.169.254")},
			"meta6.test":        {netip.MustParseAddr("fd00:ec2::254")},
			"sneaky.other.test": {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("192.168.1.1")},
		},
		UpstreamRoots: roots,
	})
	var ok bool
	f.ph, ok = f.e.Placeholder("MODEL_API_KEY")
	require.True(t, ok)
	return f
}

func TestEgressEnvMountsAndFiles(t *testing.T) {
	f := newEgressFixture(t, nil)
	env := f.e.Env()
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		assert.Equal(t, "http://127.0.0.1:3128", env[k], k)
	}
	assert.Equal(t, f.ph, env["MODEL_API_KEY"])
	assert.True(t, strings.HasPrefix(f.ph, "pairbench_placeholder_"), f.ph)
	for k, v := range env {
		assert.NotContains(t, v, egressRealKey, "env %s holds the real secret", k)
	}
	assert.Equal(t, "/.pairbench/egress/ca.pem", env["NODE_EXTRA_CA_CERTS"])
	assert.Equal(t, "/.pairbench/egress/bundle.pem", env["SSL_CERT_FILE"])

	host, inside := f.e.Mounts()
	assert.Equal(t, "/.pairbench/egress", inside)
	st, err := os.Stat(host)
	require.NoError(t, err)
	want := os.FileMode(0o700)
	if os.Geteuid() == 0 {
		want = 0o711 // a root launcher's sandbox users enter it; the proxy checks who connects
	}
	assert.Equal(t, want, st.Mode().Perm())
	ca, err := os.ReadFile(filepath.Join(host, "ca.pem"))
	require.NoError(t, err)
	assert.Equal(t, f.e.CACertPEM(), ca)
	bundle, err := os.ReadFile(filepath.Join(host, "bundle.pem"))
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(bundle), string(ca)), "bundle must end with the egress CA")
	if sys := systemBundle(); sys != nil {
		assert.Greater(t, len(bundle), len(sys), "bundle must hold the system roots too")
		pool := x509.NewCertPool()
		assert.True(t, pool.AppendCertsFromPEM(bundle))
	}
	assert.Equal(t, []string{"-forward", "127.0.0.1:3128=/.pairbench/egress/proxy.sock"}, f.e.InitArgs())

	require.NoError(t, f.e.Close())
	_, err = os.Stat(host)
	assert.True(t, os.IsNotExist(err), "Close must remove the socket directory")
}

func TestEgressStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	e, err := NewEgress(ctx, EgressConfig{TempDir: t.TempDir()})
	require.NoError(t, err)
	host, _ := e.Mounts()
	_, err = os.Stat(filepath.Join(host, "proxy.sock"))
	require.NoError(t, err)
	cancel()
	require.Eventually(t, func() bool { _, err := os.Stat(host); return os.IsNotExist(err) }, 5*time.Second, 10*time.Millisecond)
}

func TestEgressAllowedHostPassesOverHTTP2(t *testing.T) {
	f := newEgressFixture(t, nil)
	resp, err := proxyClient(t, f.e).Get(f.modelURL("/v1/models"))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	seen := f.model.seen()
	require.Len(t, seen, 1)
	assert.Equal(t, 2, seen[0].Proto, "the upstream offers HTTP/2; the proxy must use it")
	assert.Equal(t, "model.test:"+strconv.Itoa(f.model.port), seen[0].Host)
	assert.Equal(t, "/v1/models", seen[0].URL)
}

func TestEgressDeniesUnlistedHost(t *testing.T) {
	f := newEgressFixture(t, nil)
	resp, body, _ := rawConnect(t, f.e, "evil.example:443")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, body, `"evil.example"`)
	assert.Contains(t, body, "not on the allowlist")

	// The same for a plain-http absolute-form request.
	resp2, err := proxyClient(t, f.e).Get("http://evil.example/x")
	require.NoError(t, err)
	b2, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp2.StatusCode)
	assert.Contains(t, string(b2), `"evil.example"`)
}

func TestEgressRefusesAddresses(t *testing.T) {
	f := newEgressFixture(t, nil)
	cases := map[string]string{
		"127.0.0.1:" + strconv.Itoa(f.model.port): "IP literals",
		"[::1]:" + strconv.Itoa(f.model.port):     "IP literals",
		"169.254.169.254:80":                      "IP literals",
		"[fd00:ec2::254]:80":                      "IP literals",
		"10.0.0.1:443":                            "IP literals",
	}
	for hostport, want := range cases {
		resp, body, _ := rawConnect(t, f.e, hostport)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, hostport)
		assert.Contains(t, body, want, hostport)
	}
	assert.Empty(t, f.model.seen())
}

func TestEgressRefusesNamesResolvingToNonPublic(t *testing.T) {
	upCA, roots := newTestAuthority(t)
	up := newTestUpstream(t, upCA, nil)
	e := startEgress(t, EgressConfig{
		Allow: []AllowRule{
			{Host: "internal.test"}, {Host: "meta.test", Ports: []int{80}}, {Host: "meta6.test", Ports: []int{80}},
			{Host: "local.test", Ports: []int{up.port}}, {Host: "*.mixed.test"},
		},
		Resolver: mapResolver{
			"internal.test":  {netip.MustParseAddr("10.1.2.3")},
			"meta.test":      {netip.MustParseAddr("169.254.169.254")},
			"meta6.test":     {netip.MustParseAddr("fd00:ec2::254")},
			"local.test":     loopback4,
			"api.mixed.test": {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("192.168.1.1")},
		},
		// local.test may not reach loopback: AllowLoopbackHosts does not name it.
		AllowLoopbackHosts: []string{"api.mixed.test"},
		UpstreamRoots:      roots,
	})
	cases := map[string]string{
		"internal.test:443":                   "10.1.2.3, a private address",
		"meta.test:80":                        "cloud metadata",
		"meta6.test:80":                       "cloud metadata",
		"local.test:" + strconv.Itoa(up.port): "loopback",
		"api.mixed.test:443":                  "192.168.1.1, a private address",
	}
	for hostport, want := range cases {
		resp, body, _ := rawConnect(t, e, hostport)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, hostport)
		assert.Contains(t, body, want, hostport)
	}
	// Plain http absolute form is checked at dial time, with the same answer.
	resp, err := proxyClient(t, e).Get("http://meta.test/latest/meta-data/")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, string(b), "cloud metadata")
	assert.Empty(t, up.seen())
}

func TestEgressRefusesPortNotListed(t *testing.T) {
	f := newEgressFixture(t, nil)
	resp, body, _ := rawConnect(t, f.e, "model.test:22")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, body, "port 22 is not allowed")
	resp, body, _ = rawConnect(t, f.e, "model.test:443")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, body)
}

func TestEgressSwapsPlaceholderInHeadersForItsHost(t *testing.T) {
	f := newEgressFixture(t, nil)
	req, _ := http.NewRequest(http.MethodGet, f.modelURL("/v1/chat"), nil)
	req.Header.Set("Authorization", "Bearer "+f.ph)
	resp, err := proxyClient(t, f.e).Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))

	seen := f.model.seen()
	require.Len(t, seen, 1)
	assert.Equal(t, "Bearer "+egressRealKey, seen[0].Header.Get("Authorization"), "the upstream must get the real value")
	// The upstream echoed the key back: the sandbox must still see only the placeholder.
	assert.NotContains(t, string(body), egressRealKey)
	assert.Contains(t, string(body), "auth=Bearer "+f.ph)
	assert.Equal(t, "Bearer "+f.ph, resp.Header.Get("X-Echo-Auth"))
}

func TestEgressBlocksPlaceholderOutsideHeadersOrScope(t *testing.T) {
	f := newEgressFixture(t, nil)
	c := proxyClient(t, f.e)

	// To another allowed host.
	req, _ := http.NewRequest(http.MethodGet, f.otherURL("/collect"), nil)
	req.Header.Set("Authorization", "Bearer "+f.ph)
	resp, err := c.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, string(body), "placeholder for MODEL_API_KEY may only be sent to model.test")
	assert.Empty(t, f.other.seen(), "nothing may reach the other host")

	// In a header that is not an authorization header, even to its host.
	req, _ = http.NewRequest(http.MethodGet, f.modelURL("/v1/chat"), nil)
	req.Header.Set("X-Exfil", f.ph)
	resp, err = c.Do(req)
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, string(body), "appears in X-Exfil; it is swapped only in Authorization")

	// In the URL of its own host.
	resp, err = c.Get(f.modelURL("/v1/chat?key=" + f.ph))
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, string(body), "appears in the URL")
	assert.Empty(t, f.model.seen())
	assert.NotContains(t, string(body), egressRealKey)
}

func TestEgressPlainHTTPAbsoluteFormAndTunnel(t *testing.T) {
	f := newEgressFixture(t, nil)
	url := "http://model.test:" + strconv.Itoa(f.http.port) + "/v1/chat"

	// Absolute form, as most clients send plain http to a proxy.
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
	resp, err := proxyClient(t, f.e).Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, string(body))

	// Through CONNECT, as pi tunnels plain http.
	hp := "model.test:" + strconv.Itoa(f.http.port)
	resp, _, tun := rawConnect(t, f.e, hp)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	req, _ = http.NewRequest(http.MethodGet, url, nil)
	resp, body2 := roundTrip(t, tun, req)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body2)

	// A secret never crosses the network in plaintext: with the
	// placeholder, both are refused.
	req, _ = http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+f.ph)
	resp, body3 := roundTrip(t, tun, req)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, body3, "swapped only into TLS connections")
	req, _ = http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+f.ph)
	resp, err = proxyClient(t, f.e).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	// A Host that disagrees with the CONNECT target is refused.
	req, _ = http.NewRequest(http.MethodGet, "http://other.test:"+strconv.Itoa(f.http.port)+"/", nil)
	resp, body4 := roundTrip(t, tun, req)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, body4, "does not match the CONNECT target")

	seen := f.http.seen()
	require.Len(t, seen, 2)
	for _, s := range seen {
		assert.Empty(t, s.Header.Get("Authorization"))
	}

	// This host's own loopback, named by address (a model on this
	// machine), does get the key over plain http.
	e := startEgress(t, EgressConfig{
		Allow:   []AllowRule{{Host: "127.0.0.1", Ports: []int{f.http.port}}},
		Secrets: []Secret{{Name: "LOCAL_KEY", Value: egressRealKey, Hosts: []string{"127.0.0.1"}}},
	})
	ph, _ := e.Placeholder("LOCAL_KEY")
	req, _ = http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(f.http.port)+"/local", nil)
	req.Header.Set("Authorization", "Bearer "+ph)
	resp, err = proxyClient(t, e).Do(req)
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	assert.Equal(t, "Bearer "+egressRealKey, f.http.seen()[2].Header.Get("Authorization"))
	assert.NotContains(t, string(body), egressRealKey, "and what comes back is scrubbed")
}

func TestEgressRefusesSNIOrHostMismatch(t *testing.T) {
	f := newEgressFixture(t, nil)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(f.e.CACertPEM())
	target := "model.test:" + strconv.Itoa(f.model.port)

	// SNI names another host than the CONNECT target.
	resp, _, tun := rawConnect(t, f.e, target)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// A hostile client ignores certificate errors, so the proxy itself must refuse.
	err := tls.Client(tun, &tls.Config{ServerName: "other.test", InsecureSkipVerify: true}).Handshake()
	require.Error(t, err, "TLS with a mismatched SNI must fail")
	assert.Contains(t, err.Error(), "internal error", "the proxy must abort the handshake")

	// SNI right, Host header names another host.
	resp, _, tun = rawConnect(t, f.e, target)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	tc := tls.Client(tun, &tls.Config{ServerName: "model.test", RootCAs: pool, NextProtos: []string{"http/1.1"}})
	require.NoError(t, tc.Handshake())
	req, _ := http.NewRequest(http.MethodGet, "https://other.test:"+strconv.Itoa(f.other.port)+"/", nil)
	req.Header.Set("Authorization", "Bearer "+f.ph)
	resp, body := roundTrip(t, tc, req)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, body, "does not match the CONNECT target")

	assert.Empty(t, f.model.seen())
	assert.Empty(t, f.other.seen())
}

func TestEgressStreamsSSE(t *testing.T) {
	release := make(chan struct{})
	f := newEgressFixture(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(10 * time.Second):
			return // the client never saw the first event: the test fails below
		}
		fmt.Fprint(w, "data: second\n\n")
	})
	req, _ := http.NewRequest(http.MethodPost, f.modelURL("/v1/chat/completions"), strings.NewReader(`{"stream":true}`))
	req.Header.Set("Authorization", "Bearer "+f.ph) // scrubbing must not buffer the stream
	resp, err := proxyClient(t, f.e).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "data: first\n", line, "the first event must arrive before the server sends the second")
	close(release)
	rest, err := io.ReadAll(br)
	require.NoError(t, err)
	assert.Equal(t, "\ndata: second\n\n", string(rest))
}

func TestEgressConfigValidation(t *testing.T) {
	bad := map[string]EgressConfig{
		"secret host not allowed": {Allow: []AllowRule{{Host: "a.test"}}, Secrets: []Secret{{Name: "K", Value: "v", Hosts: []string{"b.test"}}}},
		"secret without host":     {Secrets: []Secret{{Name: "K", Value: "v"}}},
		"secret without value":    {Allow: []AllowRule{{Host: "a.test"}}, Secrets: []Secret{{Name: "K", Hosts: []string{"a.test"}}}},
		"secret too short":        {Allow: []AllowRule{{Host: "a.test"}}, Secrets: []Secret{{Name: "K", Value: "abc", Hosts: []string{"a.test"}}}},
		"bad env name":            {Allow: []AllowRule{{Host: "a.test"}}, Secrets: []Secret{{Name: "K-1", Value: "v", Hosts: []string{"a.test"}}}},
		"bad wildcard":            {Allow: []AllowRule{{Host: "a.*.test"}}},
		"forward is proxy port":   {ForwardPorts: []int{3128}},
	}
	for name, cfg := range bad {
		cfg.TempDir = t.TempDir()
		_, err := NewEgress(t.Context(), cfg)
		assert.Error(t, err, name)
	}
	ok := EgressConfig{TempDir: t.TempDir(), Allow: []AllowRule{{Host: "*.a.test"}}, Secrets: []Secret{{Name: "K", Value: "long-enough-value", Hosts: []string{"api.a.test", "*.a.test"}}}}
	e, err := NewEgress(t.Context(), ok)
	require.NoError(t, err)
	e.Close()
}

// TestEgressUpgradeThroughTunnel checks that a protocol upgrade (as a
// websocket makes) passes a terminated tunnel in both directions.
func TestEgressUpgradeThroughTunnel(t *testing.T) {
	upgrading := func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "pbtest" {
			http.Error(w, "want an upgrade", http.StatusBadRequest)
			return
		}
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "pbtest")
		w.WriteHeader(http.StatusSwitchingProtocols)
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		line, _ := brw.ReadString('\n')
		// An upstream that learned the key elsewhere hands it back.
		fmt.Fprintf(conn, "upgraded: %s key=%s\n", line, egressRealKey)
	}
	upCA, roots := newTestAuthority(t)
	model := newTestUpstream(t, upCA, upgrading)
	ws := newTestUpstream(t, upCA, upgrading)
	e := startEgress(t, EgressConfig{
		Allow:              []AllowRule{{Host: "model.test", Ports: []int{model.port}}, {Host: "ws.test", Ports: []int{ws.port}}},
		Secrets:            []Secret{{Name: "MODEL_API_KEY", Value: egressRealKey, Hosts: []string{"model.test"}}},
		AllowLoopbackHosts: []string{"model.test", "ws.test"},
		Resolver:           mapResolver{"model.test": loopback4, "ws.test": loopback4},
		UpstreamRoots:      roots,
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.CACertPEM())
	upgrade := func(host string, port int) (*http.Response, *bufio.Reader, net.Conn) {
		resp, _, tun := rawConnect(t, e, host+":"+strconv.Itoa(port))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		tc := tls.Client(tun, &tls.Config{ServerName: host, RootCAs: pool, NextProtos: []string{"http/1.1"}})
		req, _ := http.NewRequest(http.MethodGet, "https://"+host+":"+strconv.Itoa(port)+"/ws", nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "pbtest")
		require.NoError(t, req.Write(tc))
		br := bufio.NewReader(tc)
		resp, err := http.ReadResponse(br, req)
		require.NoError(t, err)
		return resp, br, tc
	}
	// A host a secret is scoped to: what would come back over the upgraded
	// stream cannot be searched like HTTP, so the upgrade is refused.
	resp, _, _ := upgrade("model.test", model.port)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Empty(t, model.seen())

	// Any other allowed host upgrades; the stream passes, scrubbed.
	resp, br, tc := upgrade("ws.test", ws.port)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	fmt.Fprint(tc, "ping\n")
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	ph, _ := e.Placeholder("MODEL_API_KEY")
	assert.Equal(t, "upgraded: ping\n", line)
	line, err = br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, " key="+ph+"\n", line)
}
