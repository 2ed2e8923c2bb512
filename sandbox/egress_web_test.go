package sandbox

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// webResolver answers the web tests' names; nothing asks real DNS.
var webResolver = mapResolver{
	"public.test":   {netip.MustParseAddr("93.184.215.14")},
	"public6.test":  {netip.MustParseAddr("2606:4700::1111")},
	"intranet.test": {netip.MustParseAddr("10.0.0.5")},
	"meta.test":     {netip.MustParseAddr("169.254.169.254")},
	"rebind.test":   {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("127.0.0.1")},
	"loop6.test":    {netip.MustParseAddr("::1")},
	"mapped4.test":  {netip.MustParseAddr("::ffff:192.168.0.1")},
}

// TestWebPolicyRefusesEveryNonPublicSpelling decides (without dialling)
// on the destinations a hostile page or agent would try: every non-public
// address as a literal in every spelling a URL parser might pass on, names
// resolving to one, loopback and intranet names, non-web ports.
func TestWebPolicyRefusesEveryNonPublicSpelling(t *testing.T) {
	web, err := newWebPolicy(WebAccess{Hosts: map[string]string{"Site.Test": "127.0.0.1:8080"}})
	require.NoError(t, err)
	p := &policy{resolver: webResolver, web: web}
	refused := map[string]string{ // host:port -> what the reason says
		"127.0.0.1:80": "loopback", "127.255.255.254:80": "loopback", "[::1]:443": "loopback",
		"[::ffff:127.0.0.1]:80": "loopback", "[::ffff:7f00:1]:80": "loopback",
		"[::7f00:1]:80": "IPv4-compatible", "[::ffff:0:7f00:1]:80": "IPv4-translated",
		"0.0.0.0:80": "address", "[::]:80": "address",
		"10.1.2.3:80": "private", "172.16.0.1:443": "private", "192.168.1.1:80": "private", "[fc00::1]:80": "private",
		"100.64.0.1:80": "CGNAT", "169.254.169.254:80": "metadata", "[fd00:ec2::254]:80": "metadata",
		"[fe80::1]:80": "link-local", "[fe80::1%eth0]:80": "link-local",
		"[64:ff9b::a00:1]:80": "NAT64", "[2002:7f00:1::1]:80": "6to4", "[2001::1]:80": "Teredo",
		"224.0.0.1:80": "link-local", "239.1.1.1:80": "multicast", "255.255.255.255:80": "broadcast", "198.18.0.1:80": "benchmarking", "240.0.0.1:80": "reserved",
		"localhost:80": "loopback name", "LOCALHOST.:80": "loopback name", "evil.localhost:443": "loopback name",
		"intranet:80": "single-label", "0x7f.1:80": "spelling", "0x7f000001:80": "spelling", "2130706433:80": "spelling",
		"127.1:80": "spelling", "017700000001:80": "spelling", "1.2.3:80": "spelling",
		"intranet.test:443": "10.0.0.5", "meta.test:80": "169.254.169.254", "rebind.test:443": "127.0.0.1",
		"loop6.test:80": "::1", "mapped4.test:80": "192.168.0.1",
		"public.test:22": "not a web port", "public.test:8080": "not a web port", "93.184.215.14:25": "not a web port",
	}
	for hostport, why := range refused {
		host, port, err := splitHostPort(hostport, 0)
		require.NoError(t, err, hostport)
		_, err = p.resolve(t.Context(), host, port)
		var denied *DeniedError
		if assert.ErrorAs(t, err, &denied, "%s was let through", hostport) {
			assert.Contains(t, denied.Reason, why, hostport)
		}
	}
	for _, hostport := range []string{"public.test:80", "public.test:443", "public6.test:443", "93.184.215.14:443", "[2606:4700::1111]:80", "site.test:80", "site.test:22"} {
		host, port, err := splitHostPort(hostport, 0)
		require.NoError(t, err, hostport)
		_, err = p.resolve(t.Context(), host, port)
		assert.NoError(t, err, hostport)
	}
	ap, ok := web.mapped("site.test")
	assert.True(t, ok)
	assert.Equal(t, "127.0.0.1:8080", ap.String())
}

func TestWebAccessRefusesBadConfig(t *testing.T) {
	for _, w := range []WebAccess{
		{Ports: []int{0}},
		{Hosts: map[string]string{"site.test": "localhost:80"}},
		{Hosts: map[string]string{"*.test": "127.0.0.1:80"}},
		{Hosts: map[string]string{"127.0.0.1": "127.0.0.1:80"}},
	} {
		_, err := NewEgress(t.Context(), EgressConfig{Web: &w, TempDir: t.TempDir()})
		assert.Error(t, err, "%+v", w)
	}
	_, err := NewEgress(t.Context(), EgressConfig{Web: &WebAccess{}, TempDir: t.TempDir(),
		Allow: []AllowRule{{Host: "api.test"}}, Secrets: []Secret{{Name: "K", Value: "0123456789", Hosts: []string{"api.test"}}}})
	assert.ErrorContains(t, err, "cannot swap secrets")
}

// TestWebEgressRelaysTunnelsAsTheyAre: a mapped TLS site is reached
// through CONNECT with its own certificate (nothing terminated), a mapped
// plain site through an absolute-form request, and every refusal reaches
// OnDeny; the egress writes no CA.
func TestWebEgressRelaysTunnelsAsTheyAre(t *testing.T) {
	tlsSite := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tls "+r.Host) }))
	t.Cleanup(tlsSite.Close)
	plainSite := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain "+r.Host) }))
	t.Cleanup(plainSite.Close)
	var mu sync.Mutex
	var denials []string
	e := startEgress(t, EgressConfig{
		Web: &WebAccess{Hosts: map[string]string{
			"secure.test": tlsSite.Listener.Addr().String(), "plain.test": plainSite.Listener.Addr().String(),
		}},
		Resolver: webResolver,
		OnDeny: func(d *DeniedError) {
			mu.Lock()
			denials = append(denials, d.Host)
			mu.Unlock()
		},
	})
	_, err := os.Stat(filepath.Join(e.dir, caFile))
	assert.ErrorIs(t, err, os.ErrNotExist, "a web egress has no CA")
	assert.NotContains(t, e.Env(), "SSL_CERT_FILE")
	assert.Nil(t, e.CACertPEM())

	resp, body, tunnel := rawConnect(t, e, "secure.test:443")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	tc := tls.Client(tunnel, &tls.Config{ServerName: "secure.test", InsecureSkipVerify: true})
	require.NoError(t, tc.Handshake())
	assert.True(t, tc.ConnectionState().PeerCertificates[0].Equal(tlsSite.Certificate()), "the site's own certificate came through")
	req, _ := http.NewRequest(http.MethodGet, "https://secure.test/", nil)
	_, got := roundTrip(t, tc, req)
	assert.Equal(t, "tls secure.test", got)

	c, err := net.Dial("unix", e.socket())
	require.NoError(t, err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET http://plain.test/x HTTP/1.1\r\nHost: plain.test\r\n\r\n")
	presp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	b, _ := io.ReadAll(presp.Body)
	assert.Equal(t, "plain plain.test", string(b))

	for _, hp := range []string{"127.0.0.1:443", "intranet.test:443", "localhost:80"} {
		resp, body, _ := rawConnect(t, e, hp)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s: %s", hp, body)
	}
	c2, err := net.Dial("unix", e.socket())
	require.NoError(t, err)
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c2, "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n")
	mresp, err := http.ReadResponse(bufio.NewReader(c2), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, mresp.StatusCode)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"127.0.0.1", "intranet.test", "localhost", "169.254.169.254"}, denials)
}

// TestForwardSocketsRelayToAUnixSocket relays a sandbox port to a unix
// socket on the host (another sandbox's exposed service); the proxy itself
// does not reach that port.
func TestForwardSocketsRelayToAUnixSocket(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "svc.sock")
	l, err := net.Listen("unix", socket)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go acceptEach(l, func(c net.Conn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		io.WriteString(c, "echo: "+line)
	})
	e := startEgress(t, EgressConfig{ForwardSockets: map[int]string{9222: socket}})
	assert.Contains(t, strings.Join(e.InitArgs(), " "), "127.0.0.1:9222="+filepath.Join(DefaultEgressDir, "port-9222.sock"))

	c, err := net.Dial("unix", filepath.Join(e.dir, portSocket(9222)))
	require.NoError(t, err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "hi\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "echo: hi\n", line)

	resp, _, _ := rawConnect(t, e, "127.0.0.1:9222")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a socket forward is not a proxy destination")

	_, err = NewEgress(context.Background(), EgressConfig{ForwardPorts: []int{9222}, ForwardSockets: map[int]string{9222: socket}, TempDir: t.TempDir()})
	assert.ErrorContains(t, err, "twice")
	_, err = NewEgress(context.Background(), EgressConfig{ForwardSockets: map[int]string{9222: "rel.sock"}, TempDir: t.TempDir()})
	assert.ErrorContains(t, err, "absolute")
}

// TestSocketsAtLongPaths: a socket directory deeper than a socket address
// holds (a long --temp-dir) still serves and forwards.
func TestSocketsAtLongPaths(t *testing.T) {
	deep := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	require.NoError(t, os.MkdirAll(deep, 0o700))
	target := filepath.Join(deep, "service.sock")
	require.Greater(t, len(target), maxSocketPath)
	l, err := listenUnixPath(target)
	require.NoError(t, err)
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			io.WriteString(c, "hello\n")
			c.Close()
		}
	}()
	e := startEgress(t, EgressConfig{TempDir: deep, ForwardSockets: map[int]string{9222: target}})
	c, err := DialUnix(t.Context(), filepath.Join(e.dir, portSocket(9222)))
	require.NoError(t, err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "hello\n", line)
}
