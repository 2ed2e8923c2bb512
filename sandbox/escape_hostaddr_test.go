package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/internal/offline"
)

// ownNetworkEnv names the test a re-executed test binary runs in the
// network namespace inOwnNetwork made for it.
const ownNetworkEnv = "PAIRBENCH_TEST_OWN_NETWORK"

// inOwnNetwork reports whether this process is t's run inside a network
// namespace of its own, where setup (shell commands with the capability
// to configure that network) already ran. When it is not, it re-executes
// this test binary for t alone inside such a namespace (offline.CommandAfter),
// fails t if that run fails, and returns false: the caller returns.
func inOwnNetwork(t *testing.T, setup string) bool {
	t.Helper()
	if os.Getenv(ownNetworkEnv) == t.Name() {
		return true
	}
	self, err := os.Open("/proc/self/exe") // a root build directory an unprivileged uid cannot reach
	require.NoError(t, err)
	defer self.Close()
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := offline.CommandAfter(setup, "/proc/self/fd/3", "-test.run", strings.Join(parts, "/"), "-test.count", "1", "-test.v")
	cmd.ExtraFiles = []*os.File{self}
	cmd.Env = append(os.Environ(), ownNetworkEnv+"="+t.Name())
	go func() { <-ctx.Done(); killProcess(cmd) }()
	out, err := cmd.CombinedOutput()
	switch {
	case strings.Contains(string(out), "--- PASS: "+t.Name()+" "):
		t.Logf("in a network namespace of its own:\n%s", out)
	case strings.Contains(string(out), "--- SKIP: "+t.Name()+" "):
		t.Skipf("in a network namespace of its own the test skipped:\n%s", out)
	default:
		t.Fatalf("in a network namespace of its own (%v):\n%s", err, out)
	}
	return false
}

// killProcess kills cmd's process once it has one.
func killProcess(cmd *exec.Cmd) {
	if cmd.Process != nil {
		cmd.Process.Kill()
	}
}

// The addresses TestEscapeWebEgressToTheHostItself gives its own
// namespace's dummy interface: public ones, which nonPublic lets through.
const (
	selfAddr4     = "93.184.215.14"
	selfAddr6     = "2606:4700::1111"
	selfAddrLater = "93.184.215.15"
)

// TestEscapeWebEgressToTheHostItself: a page asks the browser's web egress
// for the runner host's own public addresses, where a service bound to
// 0.0.0.0 listens on port 80 (a status page, a metrics endpoint), as IP
// literals and by a name resolving to them. The test makes a network
// namespace whose dummy interface holds those addresses. On a4d171d
// the tunnels were opened and the request answered by the host's service;
// now each is refused, while a public address that is not the host's is
// still let through.
func TestEscapeWebEgressToTheHostItself(t *testing.T) {
	eachLauncher(t, func(t *testing.T) {
		// A dummy interface, or an ifb where the kernel has no dummy
		// module (this machine), or lo itself where it has neither: the
		// addresses are the host's wherever they sit.
		setup := "dev=pb-self; { ip link add pb-self type dummy 2>/dev/null || ip link add pb-self type ifb 2>/dev/null || dev=lo; }" +
			` && ip link set "$dev" up` +
			` && ip addr add ` + selfAddr4 + `/32 dev "$dev" && ip addr add ` + selfAddr6 + `/128 dev "$dev" nodad` +
			" && echo 0 > /proc/sys/net/ipv4/ip_unprivileged_port_start"
		if !inOwnNetwork(t, setup) {
			return
		}
		// The host's service, on every address.
		var served atomic.Int32
		ln, err := net.Listen("tcp", ":80")
		require.NoError(t, err)
		t.Cleanup(func() { ln.Close() })
		go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served.Add(1)
			io.WriteString(w, "the host's own service")
		}))
		for _, a := range []string{selfAddr4, "[" + selfAddr6 + "]"} {
			resp, err := http.Get("http://" + a + "/")
			require.NoError(t, err, "the test's own service must answer on %s", a)
			resp.Body.Close()
		}
		require.EqualValues(t, 2, served.Load())

		e := startEgress(t, EgressConfig{Web: &WebAccess{}, Resolver: mapResolver{
			"self.test":  {netip.MustParseAddr(selfAddr4)},
			"self6.test": {netip.MustParseAddr("::ffff:" + selfAddr4), netip.MustParseAddr(selfAddr6)},
			"later.test": {netip.MustParseAddr(selfAddrLater)},
		}})
		for _, hp := range []string{selfAddr4 + ":80", "[" + selfAddr6 + "]:80", "[::ffff:" + selfAddr4 + "]:80", "self.test:80", "self6.test:80"} {
			resp, body, _ := rawConnect(t, e, hp)
			if assert.Equal(t, http.StatusForbidden, resp.StatusCode, "CONNECT %s: %s", hp, body) {
				assert.Contains(t, body, "an address of this host itself", hp)
			}
		}
		for _, host := range []string{selfAddr4, "self.test"} {
			c, err := net.Dial("unix", e.socket())
			require.NoError(t, err)
			c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			c.Close()
			assert.Equal(t, http.StatusForbidden, resp.StatusCode, "GET http://%s/: %s", host, body)
		}
		assert.EqualValues(t, 2, served.Load(), "the egress reached the host's own service")

		// A public address that is not the host's passes the policy...
		_, err = e.pol.resolve(t.Context(), "later.test", 80)
		assert.NoError(t, err)
		// ...until the host takes it, after the egress started.
		if os.Geteuid() != 0 {
			t.Log("an unprivileged test process cannot add an address to its namespace once running: the later address is not tried")
			return
		}
		out, err := exec.Command("ip", "addr", "add", selfAddrLater+"/32", "dev", "lo").CombinedOutput()
		require.NoError(t, err, "%s", out)
		_, err = e.pol.resolve(t.Context(), "later.test", 80)
		assert.ErrorContains(t, err, "an address of this host itself")
	})
}
