// Package clitest holds what the tests of the pairbench command share, its
// own (cmd/pairbench, which call its internals) and the system tests that
// drive the built binary as a user would (internal/e2e, build tag e2e):
// building the binary, the real stack it needs, the example registry and a
// repository of it, the fakes it talks to (S3, GitHub, Kernel), and the
// checks of what a run left on disk and in the process table.
//
// Paths relative to the test's working directory assume a package two
// levels below the checkout's root, as cmd/pairbench and internal/e2e are.
package clitest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/internal/offline"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/sandbox"
	"github.com/pairbench/pairbench/state/statetest"
)

// ExampleRegistry is the example registry, seen from a package two levels
// below the checkout's root.
const ExampleRegistry = "../../examples/registry"

// Exit codes of the pairbench binary, as docs/cli.md documents them; the
// system tests, which see only the process, check these.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
	ExitSIGINT  = 130
	ExitSIGTERM = 143
)

// RealStack is realstack.Need for a test that runs real benches, and
// returns the pinned Node tools' node_modules.
func RealStack(t *testing.T) string {
	t.Helper()
	realstack.Need(t)
	return realstack.NodeModules(t)
}

// AllowInconclusive adds --allow-inconclusive to a `pairbench run` the
// tests start, unless they say otherwise: most bench one intent with a pair
// or two, which tests the harness, not the statistics, and which run
// refuses by default (docs/statistics.md, Planning).
func AllowInconclusive(args []string) []string {
	if len(args) == 0 || args[0] != "run" || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--allow-inconclusive") }) {
		return args
	}
	return append(slices.Clone(args), "--allow-inconclusive")
}

// built is the real pairbench binary and, beside it, the sandbox's init,
// built once for all the tests of a test binary: a link takes tens of
// seconds on a busy machine, and every test would link the same bytes.
// RemoveBinaries, from TestMain, removes them.
var built struct {
	once sync.Once
	dir  string // where they were built
	path string
	err  error
}

// Build returns the real pairbench binary, built as `make build` builds it
// (pairbench-sandbox-init beside it), building both on first use. The tests
// only run it; none may write beside it.
func Build(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "pairbench-test-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		bin := filepath.Join(dir, "pairbench")
		for _, b := range []struct {
			out, pkg string
			env      []string
		}{
			{bin, "github.com/pairbench/pairbench/cmd/pairbench", nil},
			{filepath.Join(dir, "pairbench-sandbox-init"), "github.com/pairbench/pairbench/cmd/pairbench-sandbox-init", []string{"CGO_ENABLED=0"}},
		} {
			cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
			cmd.Env = append(os.Environ(), b.env...)
			if out, err := cmd.CombinedOutput(); err != nil {
				built.err = fmt.Errorf("go build %s: %w: %s", b.pkg, err, out)
				return
			}
		}
		built.path = bin
	})
	require.NoError(t, built.err)
	return built.path
}

// RemoveBinaries removes what Build built, if anything.
func RemoveBinaries() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// Main is the TestMain of the command's tests. The test binary serves as
// the sandbox's init, exactly as the pairbench binary does, since a sandbox
// started without an init beside the running binary re-executes it; then
// as the program helper names, when it says it is one (ok); else it runs
// the tests in a network namespace with loopback only (offline.Run): the
// browsers, servers and pairbench binaries they start, and the egress
// proxies those browsers reach the web through, reach nothing beyond this
// machine. At the end it stops the PostgreSQL a test started and removes
// the binaries Build built.
func Main(m *testing.M, helper func() (code int, ok bool)) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.RunInit(os.Args[2:]))
	}
	if helper != nil {
		if code, ok := helper(); ok {
			os.Exit(code)
		}
	}
	code := offline.Run(m)
	statetest.Stop()
	RemoveBinaries()
	os.Exit(code)
}
