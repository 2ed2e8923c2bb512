package sandbox

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
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

// TestEscapeRelayFlood: the proxy's connection cap also holds for a
// relayed socket (the browser's DevTools): a sandbox opening hundreds of
// connections to its relayed port, each of which the exposing side
// accepts and holds, costs the launcher a bounded number of descriptors
// (two per relayed connection), and another sandbox's relay keeps working.
func TestEscapeRelayFlood(t *testing.T) {
	requireBwrapNet(t)
	eachLauncher(t, func(t *testing.T) {
		dir := sharedDir(t)
		target := filepath.Join(dir, "devtools.sock")
		l, err := net.Listen("unix", target)
		require.NoError(t, err)
		var served atomic.Int64 // the stand-in's own ends, in this process too
		held := make(chan net.Conn, 1024)
		t.Cleanup(func() {
			l.Close()
			for len(held) > 0 {
				(<-held).Close()
			}
		})
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				served.Add(1)
				c.Write([]byte("devtools\n")) // held open: a server that never hangs up
				held <- c
			}
		}()
		cfg := EgressConfig{ForwardSockets: map[int]string{9222: target}}
		flooder := newNetSandbox(t, startEgress(t, cfg), nil, "")
		other := newNetSandbox(t, startEgress(t, cfg), nil, "")
		before := openDescriptors(t)
		done := floodLoopback(t, flooder, 9222, 3*time.Second)
		launcher := openDescriptors(t) - before - int(served.Load())
		r := other.run(t, `exec 3<>/dev/tcp/127.0.0.1/9222 && timeout 10 head -1 <&3`)
		assert.Contains(t, r.stdout, "devtools", "another sandbox's relay stopped working: %s", r)
		assert.LessOrEqual(t, launcher, 2*DefaultMaxConns+16, "one sandbox holds %d of the launcher's descriptors", launcher)
		<-done
	})
}

// TestEscapeDescriptorsToTheEgress: the sandbox reaches the egress's unix
// sockets directly (they are bound into it) and may send descriptors over
// them with SCM_RIGHTS. None may land in the launcher: the egress reads
// bytes only (the kernel drops descriptors nobody receives), so a thousand
// of them cost the launcher nothing and never become its own.
func TestEscapeDescriptorsToTheEgress(t *testing.T) {
	requireBwrapNet(t)
	eachLauncher(t, func(t *testing.T) {
		exe := testBinary(t)
		e := startEgress(t, EgressConfig{ForwardPorts: []int{newHostCanary(t).port}})
		sb := newNetSandbox(t, e, []string{exe}, "")
		passed := filepath.Join(sb.sb.Workspace(), "passed")
		require.NoError(t, os.WriteFile(passed, []byte("x"), 0o644))
		before := openDescriptors(t)
		_, inside := e.Mounts()
		var sockets []string
		for _, name := range []string{proxySocket, portSocket(e.forwardPorts()[0])} {
			sockets = append(sockets, inside+"/"+name)
		}
		for _, socket := range sockets {
			r := sb.run(t, exe+" "+escapeArg+" send-fds "+socket+" 1000 /workspace/passed")
			t.Logf("%s: %s", socket, r)
		}
		r := sb.run(t, exe+" "+escapeArg+" send-fds "+sockets[0]+" 1000 /workspace/passed")
		require.Contains(t, r.stdout, "HTTP/1.1 4", "control: the proxy read past the descriptors and answered: %s", r)
		entries, err := os.ReadDir("/proc/self/fd")
		require.NoError(t, err)
		for _, d := range entries {
			if target, err := os.Readlink(filepath.Join("/proc/self/fd", d.Name())); err == nil {
				assert.NotEqual(t, passed, target, "descriptor %s of the launcher is the sandbox's file", d.Name())
			}
		}
		assert.LessOrEqual(t, openDescriptors(t)-before, 16, "the launcher holds the descriptors the sandbox sent")
	})
}
