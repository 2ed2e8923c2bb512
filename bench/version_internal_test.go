package bench

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVersionOfACheckoutBuild builds pairbench as make build does, where
// Go cannot stamp the commit itself (-buildvcs=false, as this machine's
// GOFLAGS say): version names the commit, not "devel".
func TestVersionOfACheckoutBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("links pairbench (tens of seconds); not in -short")
	}
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "pairbench")
	cmd := exec.Command("make", "-s", "build", "BIN="+bin)
	cmd.Dir = ".."
	cmd.Env = append(cmd.Environ(), "GOFLAGS=-buildvcs=false")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	got, err := exec.Command(bin, "version").Output()
	require.NoError(t, err)
	assert.Equal(t, "devel-"+strings.TrimSpace(string(rev))[:12]+"\n", string(got))
}
