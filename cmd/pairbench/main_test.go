package main

import (
	"testing"

	"github.com/pairbench/pairbench/internal/clitest"
)

// TestMain makes the test binary the sandbox's init and runs the tests
// offline (clitest.Main).
func TestMain(m *testing.M) { clitest.Main(m, nil) }
