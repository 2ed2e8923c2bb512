package sandbox

import (
	"errors"
	"os"
	"path/filepath"
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
// that no live process holds: those left behind by a runner that was
// killed. An empty root means where New and NewEgress put them by default
// (/tmp, and os.TempDir() for egress). A directory is held from the moment
// it has its name (heldir.Make), so an unheld one is removed however young;
// only one still being made, changed after cutoff, is left alone: pass a
// cutoff a few seconds in the past. It returns the
// directories it removed; directories it could not remove are reported in
// the error and the rest are still cleaned.
func CleanStale(root string, cutoff time.Time) ([]string, error) {
	if root != "" {
		return heldir.Clean(root, cutoff, removeAll, agentDirPrefix+"*", egressDirPrefix+"*")
	}
	removed, err := heldir.Clean("/tmp", cutoff, removeAll, agentDirPrefix+"*", egressDirPrefix+"*")
	if tmp := filepath.Clean(os.TempDir()); tmp != "/tmp" {
		more, err2 := heldir.Clean(tmp, cutoff, removeAll, egressDirPrefix+"*")
		removed, err = append(removed, more...), errors.Join(err, err2)
	}
	return removed, err
}
