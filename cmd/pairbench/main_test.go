package main

import (
	"os"
	"testing"

	"github.com/pairbench/pairbench/sandbox"
	"github.com/pairbench/pairbench/state/statetest"
)

// TestMain lets the test binary serve as the sandbox's init, exactly as
// main does, since the sandbox re-executes the running binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.RunInit(os.Args[2:]))
	}
	code := m.Run()
	statetest.Stop() // the PostgreSQL a test started, if any
	os.Exit(code)
}
