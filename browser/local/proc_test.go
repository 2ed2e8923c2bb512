package local

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/sandbox"
)

// liveProcesses maps every live (not zombie) process on the host to its
// parent.
func liveProcesses(t testing.TB) map[int]int {
	t.Helper()
	parents, err := liveParents()
	require.NoError(t, err)
	return parents
}

// browserHostPid is the pid, on the host, of the process the browser's
// processes descend from (its sandbox's bubblewrap).
func browserHostPid(b *Browser) int { return b.proc.cmd.Pid() }

// browserPids returns the browser's live processes as the host sees them.
func browserPids(t testing.TB, b *Browser) []int { return processTree(browserHostPid(b)) }

func procFile(t testing.TB, pid int, name string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
	require.NoError(t, err)
	return string(b)
}

func statusOf(t testing.TB, pid int) map[string]string {
	t.Helper()
	status, err := procStatus(pid)
	require.NoError(t, err)
	return status
}

func namespacesOf(t testing.TB, pid int) map[string]string {
	t.Helper()
	ns, err := procNamespaces(pid)
	require.NoError(t, err)
	return ns
}

// browserDir is the browser's per-browser directory on the host.
func browserDir(b *Browser) string { return filepath.Dir(b.proc.sb.Home()) }

// devToolsClient is an HTTP client for the browser's DevTools server,
// through its exposed socket, as the launcher (root) can reach it.
func devToolsClient(b *Browser) *http.Client {
	socket := b.DevTools().Socket
	return &http.Client{Timeout: testsite.Patience, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return sandbox.DialUnix(ctx, socket)
		},
	}}
}

// devToolsOnLoopback relays a loopback port of the test's own to the
// browser's DevTools socket, for in-process CDP clients (chromedp, Node's
// Playwright) that dial a port, and returns the browser's URL there.
func devToolsOnLoopback(t testing.TB, b *Browser) string {
	t.Helper()
	dt := b.DevTools()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := sandbox.DialUnix(context.Background(), dt.Socket)
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, u)
			}()
		}
	}()
	path, err := b.proc.devToolsAnswers(t.Context())
	require.NoError(t, err)
	return "ws://" + l.Addr().String() + path
}

// chromiumMain returns the host pid of the browser's main Chromium process.
func chromiumMain(t testing.TB, b *Browser) int {
	t.Helper()
	for _, pid := range browserPids(t, b) {
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err == nil && strings.HasPrefix(string(cmdline), b.proc.cmd.Args[0]+"\x00") && !strings.Contains(string(cmdline), "--type=") {
			return pid
		}
	}
	t.Fatal("no main Chromium process")
	return 0
}

// A helper's title written over its environment block is the title, cut
// where the block starts; a real variable beside it is still a variable.
func TestEnvironNamesTellTheTitleFromVariables(t *testing.T) {
	title := "/usr/lib/chromium/chromium --type=gpu-process --crashpad-handler-pid=0 --user-data-dir=/tmp/profile\x00"
	environ := "id=0 --user-data-dir=/tmp/profile\x00\x00"
	assert.Empty(t, environNames([]byte(environ), []byte(title)))
	assert.Equal(t, []string{"HOME", "SECRET"},
		environNames([]byte("HOME=/tmp\x00SECRET=x\x00-- not a variable\x00"), []byte("/usr/lib/chromium/chromium\x00--headless\x00")))
}
