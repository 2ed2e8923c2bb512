package rundir

import "slices"

// PairIndex finds an intent's pairs by pair number: for each intent a
// slice indexed by pair number (plans number pairs from 0), with a map for
// a number too large or negative for one. At a million rows it is a few
// megabytes where a map per intent was tens, and the collector scans one
// pointer an intent, not one a pair.
type PairIndex struct {
	dense  map[string][]int32 // position+1 at pair; 0 where there is none
	sparse map[string]map[int]int32
}

// maxDensePair bounds the pair numbers a slice holds: a row with a wild
// pair number costs a map entry, not a slice that long.
const maxDensePair = 1 << 16

// NewPairIndex returns an empty index.
func NewPairIndex() *PairIndex { return &PairIndex{dense: map[string][]int32{}} }

// Get returns the position of intent's pair, and whether it has one.
func (x *PairIndex) Get(intent string, pair int) (int32, bool) {
	if pair >= 0 && pair < maxDensePair {
		if d := x.dense[intent]; pair < len(d) && d[pair] > 0 {
			return d[pair] - 1, true
		}
		return 0, false
	}
	k, ok := x.sparse[intent][pair]
	return k, ok
}

// Set gives intent's pair the position k (at least 0).
func (x *PairIndex) Set(intent string, pair int, k int32) {
	if pair >= 0 && pair < maxDensePair {
		d := x.dense[intent]
		if pair >= len(d) {
			d = append(d, make([]int32, pair+1-len(d))...)
			x.dense[intent] = d
		}
		d[pair] = k + 1
		return
	}
	if x.sparse == nil {
		x.sparse = map[string]map[int]int32{}
	}
	m := x.sparse[intent]
	if m == nil {
		m = map[int]int32{}
		x.sparse[intent] = m
	}
	m[pair] = k
}

// Positions returns the positions of intent's pairs, in pair-number
// order.
func (x *PairIndex) Positions(intent string) []int32 {
	var out []int32
	m := x.sparse[intent]
	var low []int
	for p := range m {
		if p < 0 {
			low = append(low, p)
		}
	}
	slices.Sort(low)
	for _, p := range low {
		out = append(out, m[p])
	}
	for _, k := range x.dense[intent] {
		if k > 0 {
			out = append(out, k-1)
		}
	}
	var high []int
	for p := range m {
		if p >= 0 {
			high = append(high, p)
		}
	}
	slices.Sort(high)
	for _, p := range high {
		out = append(out, m[p])
	}
	return out
}
