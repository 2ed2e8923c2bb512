package main

import (
	"os"
	"testing"

	"github.com/pairbench/pairbench/internal/offline"
	"github.com/pairbench/pairbench/sandbox"
	"github.com/pairbench/pairbench/state/statetest"
)

// TestMain lets the test binary serve as the sandbox's init, exactly as
// main does, since the sandbox re-executes the running binary. The tests
// run in a network namespace with loopback only (offline.Run): the
// browsers, servers and pairbench binaries they start, and the egress
// proxies those browsers reach the web through, reach nothing beyond this
// machine.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.RunInit(os.Args[2:]))
	}
	// The crash tests' runner (crash_helper_test.go), started by a test
	// already offline.
	if os.Getenv(helperEnv) != "" {
		os.Exit(runHelper())
	}
	code := offline.Run(m)
	statetest.Stop()   // the PostgreSQL a test started, if any
	removeRealBinary() // the pairbench binary the tests shared
	os.Exit(code)
}
