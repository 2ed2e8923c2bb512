package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExposeReachesAServerInsideWithoutAPort starts a server inside that
// listens only after 300 ms; the host reaches it through the exposed
// socket in the per-agent directory (a connection made early waits), and
// the sandbox's network namespace holds the only TCP port.
func TestExposeReachesAServerInsideWithoutAPort(t *testing.T) {
	needBwrap(t)
	bin := testBinary(t)
	sb := openSandbox(t, Policy{ReadOnly: []string{bin}})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c := sb.Command(ctx, bin, serviceArg, "7101", "300")
	c.Expose = []Expose{{Name: "svc.sock", Port: 7101}}
	var errOut bytes.Buffer
	c.Stdout, c.Stderr = io.Discard, &errOut
	require.NoError(t, c.Start())
	defer c.Wait()
	defer sb.Close()

	socket := filepath.Join(sb.Home(), "svc.sock")
	var conn net.Conn
	require.Eventually(t, func() bool {
		var err error
		conn, err = net.Dial("unix", socket)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the socket appears: %s", &errOut)
	defer conn.Close()
	fi, err := os.Stat(socket)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "only its owner may connect")
	fmt.Fprintln(conn, "hello")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err, errOut.String())
	assert.Equal(t, "svc: hello\n", line)

	d := net.Dialer{Timeout: time.Second}
	_, err = d.Dial("tcp", "127.0.0.1:7101")
	assert.Error(t, err, "the server inside has no port on the host")
}

func TestExposeRefusesBadEntries(t *testing.T) {
	needBwrap(t)
	for _, tc := range []struct {
		name   string
		policy Policy
		expose []Expose
		want   string
	}{
		{"path", Policy{}, []Expose{{Name: "../x.sock", Port: 80}}, "plain file name"},
		{"port", Policy{}, []Expose{{Name: "x.sock", Port: 0}}, "out of range"},
		{"twice", Policy{}, []Expose{{Name: "x.sock", Port: 80}, {Name: "x.sock", Port: 81}}, "twice"},
		{"tmpfs", Policy{Limits: Limits{TmpSize: 1 << 20}}, []Expose{{Name: "x.sock", Port: 80}}, "TmpSize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := openSandbox(t, tc.policy)
			c := sb.Command(t.Context(), "/bin/true")
			c.Expose = tc.expose
			err := c.Start()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestExtraFilesReachTheCommandAsDescriptors3And4 gives the command two
// pipes, as Chromium's --remote-debugging-pipe takes them.
func TestExtraFilesReachTheCommandAsDescriptors3And4(t *testing.T) {
	needBwrap(t)
	sb := openSandbox(t, Policy{})
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var stdout bytes.Buffer
	c := sb.Command(ctx, "bash", "-c", `read -r line <&3; echo "got $line" >&4`)
	c.ExtraFiles = []*os.File{inR, outW}
	c.Stdout, c.Stderr = &stdout, &stdout
	require.NoError(t, c.Start())
	inR.Close()
	outW.Close()
	fmt.Fprintln(inW, "ping")
	inW.Close()
	got, err := io.ReadAll(outR)
	require.NoError(t, err)
	require.NoError(t, c.Wait(), stdout.String())
	assert.Equal(t, "got ping\n", string(got))
}

func TestNoWorkspaceLeavesOnlyHomeWritable(t *testing.T) {
	needBwrap(t)
	sb := openSandbox(t, Policy{NoWorkspace: true})
	assert.Empty(t, sb.Workspace())
	r := runSh(t, sb, `pwd; test -e /workspace && echo "workspace exists"; touch /tmp/ok && echo home-writable`)
	assert.Equal(t, "/tmp\nhome-writable\n", r.out)

	_, err := New(t.Context(), Policy{NoWorkspace: true, Workspace: t.TempDir()})
	assert.ErrorContains(t, err, "NoWorkspace")
}

func TestFilesAreReadOnlyAtTheirPaths(t *testing.T) {
	needBwrap(t)
	sb := openSandbox(t, Policy{Files: map[string]string{"/etc/chromium/policies/managed/x.json": `{"a":1}`}})
	r := runSh(t, sb, `cat /etc/chromium/policies/managed/x.json; echo; echo '{}' > /etc/chromium/policies/managed/x.json && echo written`)
	assert.Equal(t, "{\"a\":1}\n", r.out[:len("{\"a\":1}\n")])
	assert.NotContains(t, r.out, "written")

	for _, bad := range []string{"etc/x", "/tmp/x", "/usr/lib/x", "/proc/x", "/etc/../tmp/x", "/workspace/x"} {
		_, err := New(t.Context(), Policy{Files: map[string]string{bad: "x"}})
		assert.Error(t, err, bad)
	}
}

// TestUserNamespacesOnlyWhenAllowed: refused by default, allowed for a
// program that confines itself further (Chromium's sandbox).
func TestUserNamespacesOnlyWhenAllowed(t *testing.T) {
	needBwrap(t)
	denied := runSh(t, openSandbox(t, Policy{}), `unshare -U true && echo created`)
	assert.NotContains(t, denied.out, "created")
	allowed := runSh(t, openSandbox(t, Policy{AllowUserNamespaces: true}), `unshare -U true && echo created`)
	assert.Contains(t, allowed.out, "created")
}
