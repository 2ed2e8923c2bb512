package main

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

	// Every subcommand's bad flag is a usage error too: they share the
	// root's flag error function.
	for _, sub := range commands() {
		args := []string{sub.Name(), "--no-such-flag"}
		if sub.HasSubCommands() {
			args = []string{sub.Name(), sub.Commands()[0].Name(), "--no-such-flag"}
		}
		code, _, stderr = runCLI(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, "unknown flag: --no-such-flag", "%v", args)
	}

	// A stray argument is a usage error too, cobra's own checks included;
	// a group without a subcommand prints its help.
	for _, args := range [][]string{{"version", "x"}, {"demo", "x"}, {"serve", "x"}, {"sandbox", "check", "x"}, {"sandbox", "x"}} {
		code, _, stderr = runCLI(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, `unknown command "x"`, "%v", args)
	}
	code, out, _ = runCLI(t, "sandbox")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "pairbench sandbox check")

	code, out, _ = runCLI(t, "--help")
	assert.Equal(t, exitOK, code)
	for _, sub := range []string{"run", "report", "validate", "sandbox", "demo", "merge", "serve"} {
		assert.Contains(t, out, "  "+sub+" ", "the help lists %s", sub)
	}
}

// TestSignalsMapToExitCodes sends this process a signal while a command
// context is live: the context ends with the signal as its cause, and the
// exit code is 128 + the signal's number.
func TestSignalsMapToExitCodes(t *testing.T) {
	for sig, want := range map[syscall.Signal]int{syscall.SIGINT: exitSIGINT, syscall.SIGTERM: exitSIGTERM} {
		ctx, stop := signalContext(context.Background())
		require.NoError(t, syscall.Kill(os.Getpid(), sig))
		select {
		case <-ctx.Done():
		case <-time.After(time.Minute):
			t.Fatalf("%v did not cancel the context", sig)
		}
		var stderr strings.Builder
		assert.Equal(t, want, exitCode(ctx, ctx.Err(), &stderr), "%v", sig)
		assert.Contains(t, stderr.String(), "stopped by")
		stop()
	}
}
