package local

import (
	"os"
	"testing"

	"github.com/pairbench/pairbench/internal/offline"
	"github.com/pairbench/pairbench/sandbox"
)

// TestMain lets the test binary stand in for pairbench's own binary: the
// sandbox's init inside the browser's and the agent's sandboxes, and the
// raw CDP client the escape tests run inside an agent's sandbox. The tests
// run in a network namespace with loopback only (offline.Main), so no
// browser they start reaches beyond this machine whatever its egress
// allows.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case sandbox.InitArg:
			os.Exit(sandbox.RunInit(os.Args[2:]))
		case attackArg:
			os.Exit(runAttack(os.Args[2:]))
		}
	}
	offline.Main(m)
}
