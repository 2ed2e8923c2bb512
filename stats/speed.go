package stats

import (
	"math"
	"slices"
)

// median returns the median of xs (the mean of the two middle values when
// len(xs) is even), or NaN when xs is empty. It reorders xs.
func Median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	hi := selectKth(xs, n/2)
	if n%2 == 1 {
		return hi
	}
	// After selection every value left of n/2 is at most xs[n/2].
	return (slices.Max(xs[:n/2]) + hi) / 2
}

// selectKth reorders xs so that xs[k] is its k-th smallest value (from 0),
// nothing left of it is larger and nothing right of it smaller, and returns
// xs[k]. It partitions three ways, so runs of equal values cost nothing.
func selectKth(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		// Median of three as the pivot.
		mid := lo + (hi-lo)/2
		a, b, c := xs[lo], xs[mid], xs[hi]
		pivot := max(min(a, b), min(max(a, b), c))
		// Dutch national flag: [lo,lt) < pivot, [lt,i) == pivot, (gt,hi] > pivot.
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch v := xs[i]; {
			case v < pivot:
				xs[lt], xs[i] = xs[i], xs[lt]
				lt++
				i++
			case v > pivot:
				xs[gt], xs[i] = xs[i], xs[gt]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return xs[k]
		}
	}
	return xs[k]
}
