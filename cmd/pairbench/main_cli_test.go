package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRootCommandExitCodes(t *testing.T) {
	code, out, _ := runCLI(t)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "Available Commands", "no subcommand prints the help")

	code, _, stderr := runCLI(t, "bogus")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `unknown command "bogus"`)

	code, _, stderr = runCLI(t, "--nope")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "unknown flag")

	code, out, _ = runCLI(t, "--help")
	assert.Equal(t, exitOK, code)
	for _, sub := range []string{"run", "report", "validate", "sandbox", "demo", "merge", "serve"} {
		assert.Contains(t, out, "  "+sub+" ", "the help lists %s", sub)
	}
}
