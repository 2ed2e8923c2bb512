package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench/internal/realstack"
)

func TestSandboxCheckPasses(t *testing.T) {
	realstack.Need(t, realstack.Bubblewrap, realstack.Chromium)
	code, out, errOut := runCLI(t, "sandbox", "check")
	assert.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "sandbox check passed")
	assert.Contains(t, out, "\nlimits: ", "the check says how limits are enforced")
	assert.Contains(t, out, "\ndevice nodes: ")
	assert.Contains(t, out, "\nshared between sandboxes: ", "the check says what an unprivileged launcher cannot isolate")
	assert.Contains(t, out, "the trial browser is confined")
}

func TestSandboxCheckCanLeaveTheBrowserOut(t *testing.T) {
	realstack.Need(t, realstack.Bubblewrap)
	code, out, errOut := runCLI(t, "sandbox", "check", "--browser=false")
	assert.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.NotContains(t, out, "browser")
}

func TestSandboxCheckFailsClosedOnAVisiblePath(t *testing.T) {
	realstack.Need(t, realstack.Bubblewrap, realstack.Chromium)
	code, out, errOut := runCLI(t, "sandbox", "check", "--hidden", "/usr/share")
	assert.Equal(t, exitFailure, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Equal(t, "sandbox check failed: a sandbox can see what it must not: visible: /usr/share\n", errOut)
}

func TestSandboxRunUsage(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"sandbox", "run", "true"}, "put the command after --"},
		{[]string{"sandbox", "run"}, "put the command after --"},
		{[]string{"sandbox", "run", "--allow-host", "http://x/", "--", "true"}, "--allow-host"},
		{[]string{"sandbox", "run", "--secret", "NOHOST", "--", "true"}, "--secret"},
		{[]string{"sandbox", "run", "--secret", "K=PAIRBENCH_TEST_UNSET_VAR@api.example", "--allow-host", "api.example", "--", "true"}, "empty or unset"},
	}
	for _, c := range cases {
		code, _, errOut := runCLI(t, c.args...)
		assert.Equal(t, exitUsage, code, "%q", c.args)
		assert.Contains(t, errOut, c.want, "%q", c.args)
	}
}

func TestSandboxRunConfinesTheCommand(t *testing.T) {
	realstack.Need(t, realstack.Bubblewrap)
	t.Setenv("PAIRBENCH_TEST_REAL_KEY", "sk-real-value-never-inside")
	code, out, errOut := runCLI(t, "sandbox", "run",
		"--allow-host", "api.example", "--secret", "API_KEY=PAIRBENCH_TEST_REAL_KEY@api.example",
		"--", "sh", "-c", `id -u; echo "$HTTPS_PROXY"; echo "$API_KEY"; test -e /root || test -e /work && echo host-visible; env | grep -c REAL_KEY`)
	assert.Equal(t, exitFailure, code, "grep -c found nothing, so the script exits 1: stdout:\n%s\nstderr:\n%s", out, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if assert.Len(t, lines, 4, out) {
		assert.Equal(t, "1000", lines[0])
		assert.Equal(t, "http://127.0.0.1:3128", lines[1])
		assert.NotEqual(t, "sk-real-value-never-inside", lines[2])
		assert.NotEmpty(t, lines[2], "the placeholder")
		assert.Equal(t, "0", lines[3])
	}
	assert.NotContains(t, out+errOut, "sk-real-value-never-inside")
	assert.Contains(t, errOut, "pairbench: sh exited with status 1")
}

// TestSandboxCheckRefusesAHiddenPathThatIsNotThere: a --hidden path that
// does not exist proves nothing hidden; the check refuses it as a usage
// error instead of passing.
func TestSandboxCheckRefusesAHiddenPathThatIsNotThere(t *testing.T) {
	code, stdout, stderr := runCLI(t, "sandbox", "check", "--browser=false", "--hidden", "/nonexistent/secrets")
	assert.Equal(t, exitUsage, code, stdout)
	assert.Contains(t, stderr, "--hidden /nonexistent/secrets: lstat /nonexistent/secrets: no such file or directory")
	assert.NotContains(t, stdout, "passed")
}
