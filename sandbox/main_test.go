package sandbox

import (
	"os"
	"testing"
)

// TestMain lets the test binary stand in for pairbench's own binary: tests
// re-execute os.Args[0] with a mode argument, exactly as the sandbox launcher
// re-executes pairbench. Other helper modes of this package's tests may be
// added here as further cases.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case InitArg:
			os.Exit(RunInit(os.Args[2:]))
		case escapeArg:
			os.Exit(runEscape(os.Args[2:]))
		case serviceArg:
			os.Exit(runService(os.Args[2:]))
		case launcherArg:
			os.Exit(runLauncher(os.Args[2:]))
		}
	}
	code := m.Run()
	removeTestBinary()
	os.Exit(code)
}
