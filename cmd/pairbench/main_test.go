package main

import (
	"os"
	"testing"

	"github.com/pairbench/pairbench/sandbox"
)

// TestMain lets the test binary serve as the sandbox's init, exactly as
// main does, since the sandbox re-executes the running binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.RunInit(os.Args[2:]))
	}
	os.Exit(m.Run())
}
