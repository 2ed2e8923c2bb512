package local

import (
	"os"
	"time"

	"github.com/pairbench/pairbench/internal/heldir"
)

// profilePrefix names the profile directories this package creates. Each is
// held with an exclusive flock on the directory itself while its browser
// runs; the kernel drops the lock when pairbench dies, however it dies, so
// CleanStale can tell a killed runner's leftovers from a live browser's.
const profilePrefix = "pairbench-chromium-"

// CleanStale removes the Chromium profile directories under root
// (os.TempDir() when empty) that no live pairbench holds: those of runners
// that were killed. (Their browsers died with them: see startProcess.) A
// directory last changed after cutoff is left alone, since its creator may
// not have locked it yet; pass a cutoff a few seconds in the past. It
// returns the directories removed; failures are joined in the error and the
// rest are still cleaned.
func CleanStale(root string, cutoff time.Time) ([]string, error) {
	if root == "" {
		root = os.TempDir()
	}
	return heldir.Clean(root, cutoff, nil, profilePrefix+"*")
}
