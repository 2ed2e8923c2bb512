package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSelectKthAndMedian(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		xs := make([]float64, 1+r.IntN(40))
		for i := range xs {
			xs[i] = float64(r.IntN(8)) // many ties
		}
		sorted := slices.Sorted(slices.Values(xs))
		k := r.IntN(len(xs))
		got := selectKth(slices.Clone(xs), k)
		require.Equal(t, sorted[k], got, "selectKth(%v, %d)", xs, k)
		n := len(sorted)
		want := sorted[n/2]
		if n%2 == 0 {
			want = (sorted[n/2-1] + sorted[n/2]) / 2
		}
		require.Equal(t, want, Median(slices.Clone(xs)), "Median(%v)", xs)
	}
	assert.True(t, math.IsNaN(Median(nil)))
}
