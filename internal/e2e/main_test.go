//go:build e2e

package e2e

import (
	"os"
	"testing"

	"github.com/pairbench/pairbench/internal/clitest"
)

// TestMain makes the test binary the sandbox's init, which the crash tests'
// runner needs (it runs the engine in this binary), or that runner when a
// crash test started it (crash_helper_test.go, already offline); else it
// runs the tests offline (clitest.Main).
func TestMain(m *testing.M) {
	clitest.Main(m, func() (int, bool) {
		if os.Getenv(helperEnv) == "" {
			return 0, false
		}
		return runHelper(), true
	})
}
