package sandbox

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Attacks on the relay between two sandboxes: a socket one sandbox exposes
// (Cmd.Expose, the browser's DevTools) that the launcher relays into
// another (EgressConfig.ForwardSockets, the trial's agent). The exposed
// socket lives in the exposing sandbox's own /tmp, which that sandbox may
// rewrite at will; the launcher, not the sandbox, dials it.

// newUnixCanary returns a host unix socket in dir that no sandbox may
// reach (it stands in for another trial's egress, which admits the
// launcher's uid, or a root-only service such as a container runtime's
// socket), counting connections, and its path.
func newUnixCanary(t *testing.T, dir string) (*hostCanary, string) {
	t.Helper()
	path := filepath.Join(dir, "host-service.sock")
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	c := &hostCanary{}
	c.serve(t, l)
	return c, path
}

// TestEscapeExposedSocketSwap: the exposing sandbox replaces its exposed
// socket with a link, or its directory entry with one to a host socket,
// and the other sandbox connects to its relayed port: the launcher must
// not follow the link to the host socket on its behalf.
func TestEscapeExposedSocketSwap(t *testing.T) {
	requireBwrapNet(t)
	eachLauncher(t, func(t *testing.T) {
		canary, target := newUnixCanary(t, sharedDir(t))
		swaps := map[string]string{
			"a symbolic link to a host socket":        `ln -s ` + target + ` /tmp/svc.sock`,
			"a relative link through the host's root": `ln -s ../../../../../../../..` + target + ` /tmp/svc.sock`,
			"a relative link to a link":               `ln -s ` + target + ` /tmp/hop && ln -s hop /tmp/svc.sock`,
		}
		for name, swap := range swaps {
			t.Run(name, func(t *testing.T) {
				before := canary.conns.Load()
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				exposer := openSandbox(t, Policy{NoWorkspace: true})
				c := exposer.Command(ctx, "sh", "-c", `while [ ! -S /tmp/svc.sock ]; do sleep 0.01; done
					rm /tmp/svc.sock && `+swap+` && touch /tmp/swapped && exec sleep 30`)
				c.Expose = []Expose{{Name: "svc.sock", Port: 7103}}
				require.NoError(t, c.Start())
				t.Cleanup(func() { exposer.Close(); c.Wait() })
				require.Eventually(t, func() bool {
					_, err := os.Stat(filepath.Join(exposer.Home(), "swapped"))
					return err == nil
				}, 20*time.Second, 20*time.Millisecond, "the exposing sandbox swapped its socket")

				e := startEgress(t, EgressConfig{ForwardSockets: map[int]string{9222: filepath.Join(exposer.Home(), "svc.sock")}})
				agent := newNetSandbox(t, e, nil, "")
				r := agent.run(t, `exec 3<>/dev/tcp/127.0.0.1/9222 || exit 3
					echo relay-accepted; printf 'GET /json/version HTTP/1.0\r\n\r\n' >&3; timeout 3 cat <&3; true`)
				require.Contains(t, r.stdout, "relay-accepted", "the agent reached its relayed port: %s", r)
				assert.NotContains(t, r.stdout, "canary-reached", "the relay led to a host socket: %s", r)
				assert.Equal(t, before, canary.conns.Load(), "the launcher dialled the host socket the link names")
			})
		}
	})
}

// TestChildVerdict: an unprivileged run that skipped, or ran nothing, is
// not taken for one that passed (runUnprivileged).
func TestChildVerdict(t *testing.T) {
	skipped := "=== RUN   TestEscapeX\n--- SKIP: TestEscapeX (0.00s)\n    sandbox_test.go:34: bubblewrap cannot create user namespaces here\nPASS\nok\n"
	v, why := childVerdict([]byte(skipped), "TestEscapeX")
	assert.Equal(t, "skip", v)
	assert.Contains(t, why, "cannot create user namespaces")
	v, _ = childVerdict([]byte("testing: warning: no tests to run\nPASS\n"), "TestEscapeX")
	assert.Equal(t, "missing", v)
	v, _ = childVerdict([]byte("=== RUN   TestEscapeXY\n--- PASS: TestEscapeXY (0.01s)\nPASS\n"), "TestEscapeX")
	assert.Equal(t, "missing", v, "another test's result is not this one's")
	v, _ = childVerdict([]byte("=== RUN   TestEscapeX\n    --- SKIP: TestEscapeX/sub (0.00s)\n--- PASS: TestEscapeX (0.01s)\nPASS\n"), "TestEscapeX")
	assert.Equal(t, "pass", v, "a skipped subtest is the test's own business")
}
