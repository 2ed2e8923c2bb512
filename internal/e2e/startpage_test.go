//go:build e2e

package e2e

import (
	"net"
	"path/filepath"
	"testing"

	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStartPageFailuresNameTheCause runs benches whose start page cannot
// load, as a team benching its own site first meets them: a --host
// mapping that names another host than the registry's (a typo), and a
// mapping to a port where nothing listens. The smoke gate stops each with
// the cause, never with "document.modelContext is missing".
func TestStartPageFailuresNameTheCause(t *testing.T) {
	tools := clitest.RealStack(t)
	bin := clitest.Build(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	l.Close()
	for _, c := range []struct{ host, want string }{
		{"book.example=" + closed, "the name books.example does not resolve on this host"},
		{"books.example=" + closed, "--host maps books.example to " + closed + ", where nothing listens (connection refused)"},
	} {
		t.Run(c.host, func(t *testing.T) {
			code, _, stderr := runBin(t, bin, "run", clitest.ExampleRegistry, "--intent", "books-cheapest-by-author", "--pairs", "1",
				"--host", c.host, "--runs-dir", filepath.Join(t.TempDir(), "runs"), "--tools", tools, "--start-delay", "0")
			assert.Equal(t, clitest.ExitFailure, code)
			assert.Contains(t, stderr, "start page http://books.example/ did not load: "+c.want)
			assert.NotContains(t, stderr, "modelContext")
		})
	}
}
