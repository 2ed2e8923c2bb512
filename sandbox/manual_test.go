package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestManualRunGivesOnlyWhatItAllows runs a command by hand as pairbench
// sandbox run does: it sees the named host variable and a placeholder for
// the secret, never the secret or another host variable, the workspace
// without its hidden file, and its exit status comes back.
func TestManualRunGivesOnlyWhatItAllows(t *testing.T) {
	needBwrap(t)
	secret := newMarker(t, "manual-secret")
	other := newMarker(t, "manual-other")
	t.Setenv("PAIRBENCH_TEST_MANUAL_SECRET", secret)
	t.Setenv("PAIRBENCH_TEST_MANUAL_OTHER", other)
	t.Setenv("PAIRBENCH_TEST_MANUAL_PASSED", "passed")
	ws := sharedDir(t)
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".env"), []byte(secret), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("notes\n"), 0o644))

	m := Manual{Allow: []string{"api.example"}, Secrets: []string{"API_KEY=PAIRBENCH_TEST_MANUAL_SECRET@api.example"},
		Env: []string{"PAIRBENCH_TEST_MANUAL_PASSED", "PAIRBENCH_TEST_MANUAL_UNSET"}, Workspace: ws, Hide: []string{".env"}}
	egress, err := m.Egress(t.Context(), os.Getenv)
	require.NoError(t, err)
	defer egress.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	err = m.Run(ctx, egress, strings.NewReader(""), &out, &out, "/bin/sh", "-c",
		`echo "$PAIRBENCH_TEST_MANUAL_PASSED ${PAIRBENCH_TEST_MANUAL_UNSET-unset}"; echo "$API_KEY"; echo "$HTTPS_PROXY"
		cat /workspace/notes.txt; test -e /workspace/.env && echo env-visible; env; exit 3`)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, out.String())
	assert.Equal(t, 3, ee.ExitCode())
	lines := strings.Split(out.String(), "\n")
	require.Greater(t, len(lines), 4, out.String())
	assert.Equal(t, "passed unset", lines[0])
	assert.NotEmpty(t, lines[1], "a placeholder in API_KEY")
	assert.Equal(t, "http://127.0.0.1:3128", lines[2])
	assert.Equal(t, "notes", lines[3])
	assert.NotContains(t, out.String(), "env-visible")
	assert.NotContains(t, out.String(), secret)
	assert.NotContains(t, out.String(), other)
}

func TestManualEgressRefusesWhatDoesNotParse(t *testing.T) {
	for want, m := range map[string]Manual{
		"--allow-host": {Allow: []string{"bad host:x"}},
		"--secret":     {Secrets: []string{"NO_AT_SIGN"}},
	} {
		_, err := m.Egress(t.Context(), func(string) string { return "v" })
		assert.ErrorContains(t, err, want)
	}
}
