package githubtest_test

import (
	"testing"

	"github.com/pairbench/pairbench/bot/githubtest"
)

// BenchmarkNew measures starting a fake GitHub: loading and validating the
// pruned REST description and building its router.
func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		githubtest.New(b)
	}
}
