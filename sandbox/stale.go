package sandbox

import (
	"os"
	"time"

	"github.com/pairbench/pairbench/internal/heldir"
)

// Host directories created per agent. A process killed with SIGKILL cannot
// remove them, so each is held (package heldir) for as long as it is in
// use; CleanStale removes the ones nobody holds.
const (
	agentDirPrefix  = "pairbench-sandbox-"
	egressDirPrefix = "pairbench-egress-"
)

// CleanStale removes the per-agent and egress socket directories under root
// (os.TempDir() when empty) that no live process holds: those left behind
// by a runner that was killed. A directory last changed after cutoff is left
// alone even when unheld, because its creator may not have locked it yet;
// pass a cutoff a few seconds in the past. It returns the directories it
// removed; directories it could not remove are reported in the error and
// the rest are still cleaned.
func CleanStale(root string, cutoff time.Time) ([]string, error) {
	return heldir.Clean(orDefault(root, os.TempDir()), cutoff, removeAll, agentDirPrefix+"*", egressDirPrefix+"*")
}
