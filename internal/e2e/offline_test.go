//go:build e2e

package e2e

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/runner"
)

// TestChromiumStartedByTestsHasNoRouteOut proves TestMain's offline.Run. A
// Chromium this package's tests start runs in a network namespace other
// than the host's, and so does its only way out, the egress proxy in the
// process that started it (this test binary, or a pairbench binary it
// runs, which inherits its namespace), whose namespace has loopback alone.
// The host's namespace is the one the test binary was started in: its
// parent's (offline.Run's outer process, or go test without it).
func TestChromiumStartedByTestsHasNoRouteOut(t *testing.T) {
	realstack.Need(t, realstack.Chromium)
	host := netNamespace(t, os.Getppid())
	egress := netNamespace(t, os.Getpid())
	require.NotEqual(t, host, egress, "the tests, and the egress proxies of the browsers they start, run in the host's network namespace")
	ifaces, err := net.Interfaces()
	require.NoError(t, err)
	var names []string
	for _, i := range ifaces {
		names = append(names, i.Name)
	}
	assert.Equal(t, []string{"lo"}, names, "the tests' network namespace has loopback only")

	p, err := local.New(local.Config{Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	b, err := p.Open(t.Context(), runner.BrowserSpec{})
	require.NoError(t, err)
	defer b.Close(context.Background())
	chromiums := descendantsNamed(t, os.Getpid(), "chromium")
	require.NotEmpty(t, chromiums, "no Chromium process under the test")
	for _, pid := range chromiums {
		assert.NotEqual(t, host, netNamespace(t, pid), "Chromium %d is in the host's network namespace", pid)
	}
}

// netNamespace names the network namespace process pid is in.
func netNamespace(t *testing.T, pid int) string {
	t.Helper()
	ns, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "ns", "net"))
	require.NoError(t, err)
	return ns
}

// descendantsNamed returns the live descendants of root whose command name
// is name, from each process's /proc/PID/status (Name and PPid).
func descendantsNamed(t *testing.T, root int, name string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	parent := map[int]int{}
	var named []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue // gone meanwhile
		}
		fields := map[string]string{}
		for line := range strings.SplitSeq(string(status), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				fields[k] = strings.TrimSpace(v)
			}
		}
		if strings.HasPrefix(fields["State"], "Z") {
			continue
		}
		parent[pid], _ = strconv.Atoi(fields["PPid"])
		if fields["Name"] == name {
			named = append(named, pid)
		}
	}
	var found []int
	for _, pid := range named {
		for p := parent[pid]; p > 0; p = parent[p] {
			if p == root {
				found = append(found, pid)
				break
			}
		}
	}
	return found
}
