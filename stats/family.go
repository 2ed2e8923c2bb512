package stats

import (
	"math"
	"slices"
)

// A family is one kind of test (speed, or accuracy) across a run's intents.
// Labels need every claim in a family to hold together with probability at
// least 1 − α, so the family's p values are adjusted: first Tarone's (1990)
// selection, then Holm's step-down over the intents selected.
//
// Selection uses only each intent's attainable p (the smallest p its
// numbers of pairs could give, whatever the signs), which does not depend
// on the outcome being tested, so leaving an intent out costs nothing in
// validity. An intent is tested when its attainable p is at most α/K, for
// the smallest K such that at most K intents reach α/K: an intent that
// could never beat α/K would only raise everyone else's bar.

// FamilyResult is one intent's part in its family.
type FamilyResult struct {
	// Tested is true when the intent was selected into the family.
	Tested bool
	// Adj is the Holm-adjusted p (1 when not tested).
	Adj float64
	// Best is the adjusted p the intent would get had its own p been its
	// attainable p, the others' held as observed (1 when not tested).
	Best float64
	// Threshold is the largest raw p that this intent could have had and
	// still been significant (adjusted p ≤ α), the others' held as
	// observed; 0 when not tested. The intent's raw p is at most Threshold
	// exactly when Adj ≤ α, so an interval at level 1 − Threshold excludes
	// no difference exactly when the label claims one.
	Threshold float64
}

// AdjustFamily adjusts p values ps, whose attainable values are pmin, at
// level alpha. Members with a NaN p are not tested.
func AdjustFamily(ps, pmin []float64, alpha float64) []FamilyResult {
	out := make([]FamilyResult, len(ps))
	for i := range out {
		out[i] = FamilyResult{Adj: 1, Best: 1}
	}
	k := taroneK(pmin, alpha)
	var idx []int
	for i := range ps {
		if !math.IsNaN(ps[i]) && pmin[i] <= alpha/float64(k) {
			idx = append(idx, i)
		}
	}
	sel := make([]float64, len(idx))
	for j, i := range idx {
		sel[j] = ps[i]
	}
	adj := Holm(sel)
	sorted := slices.Sorted(slices.Values(sel))
	for j, i := range idx {
		h := newHolmOthers(sorted, sel[j])
		out[i] = FamilyResult{Tested: true, Adj: adj[j], Best: h.adjusted(pmin[i]), Threshold: h.threshold(alpha)}
	}
	return out
}

// taroneK is the smallest K ≥ 1 such that at most K of the attainable p
// values are ≤ alpha/K.
func taroneK(pmin []float64, alpha float64) int {
	for k := 1; ; k++ {
		n := 0
		for _, p := range pmin {
			if p <= alpha/float64(k) {
				n++
			}
		}
		if n <= k {
			return k
		}
	}
}

// holmOthers answers what Holm gives one member for any raw p of its own,
// the others' p values held fixed.
type holmOthers struct {
	m      int
	others []float64 // ascending
	// pref[k] is the largest adjusted value among the k smallest others:
	// max over j < k of min(1, (m − j)·others[j]).
	pref []float64
}

// newHolmOthers prepares the member whose p is self among the family's p
// values sorted (ascending, self among them).
func newHolmOthers(sorted []float64, self float64) holmOthers {
	at, _ := slices.BinarySearch(sorted, self)
	others := make([]float64, 0, len(sorted)-1)
	others = append(others, sorted[:at]...)
	others = append(others, sorted[at+1:]...)
	h := holmOthers{m: len(sorted), others: others, pref: make([]float64, len(others)+1)}
	for j, q := range others {
		h.pref[j+1] = max(h.pref[j], min(1, float64(h.m-j)*q))
	}
	return h
}

// adjusted is the member's Holm-adjusted p had its raw p been p: with k
// others strictly below p it is max(pref[k], min(1, (m − k)·p)), which is
// what Holm computes whatever the order among equal values.
func (h holmOthers) adjusted(p float64) float64 {
	k, _ := slices.BinarySearch(h.others, p) // others[:k] < p
	return max(h.pref[k], min(1, float64(h.m-k)*p))
}

// threshold is the largest p whose adjusted value is ≤ alpha (0 when none
// is). The adjusted value never falls as p grows, so a search over the
// float64s in [0, 1], whose bit patterns are in the same order, finds it
// exactly.
func (h holmOthers) threshold(alpha float64) float64 {
	if h.adjusted(0) > alpha {
		return 0
	}
	if h.adjusted(1) <= alpha {
		return 1
	}
	lo, hi := uint64(0), math.Float64bits(1) // adjusted(lo) ≤ alpha < adjusted(hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if h.adjusted(math.Float64frombits(mid)) <= alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Float64frombits(lo)
}
