package rundir

import "github.com/pairbench/pairbench"

// planRowsIndex is what PlanRows knows of each planned pair: its order and
// which of its trials were kept, found by intent and pair number without
// hashing a Key (an intent's id is looked up once per run of rows of the
// same intent, its pair by number).
type planRowsIndex struct {
	intents map[string]*intentIndex
	// last is the intent of the last lookup: rows come intent by intent.
	lastID string
	last   *intentIndex
}

// intentIndex is one planned intent's pairs.
type intentIndex struct {
	// pairs holds the intent's pairs, by pair number when byNumber is nil
	// (the plan numbers them 0 or 1 to n), else at byNumber's index.
	pairs    []pairIndex
	byNumber map[int]int32
}

// pairIndex is one planned pair: its order (0 for no pair of that
// number), and per arm a bit for each attempt kept (attempt a is bit a,
// for attempts 0 to 63).
type pairIndex struct {
	orderCode uint8
	kept      [2]uint64
}

const (
	orderCodeAB = 1 + iota
	orderCodeBA
)

func (p *pairIndex) order() pairbench.Order {
	if p.orderCode == orderCodeBA {
		return pairbench.BA
	}
	return pairbench.AB
}

func newPlanRowsIndex(plan *Plan) planRowsIndex {
	x := planRowsIndex{intents: make(map[string]*intentIndex, len(plan.Intents))}
	for _, in := range plan.Intents {
		ii := &intentIndex{}
		top := -1
		for _, pp := range in.Pairs {
			top = max(top, pp.Pair)
		}
		if top >= 2*len(in.Pairs)+64 { // numbered sparsely: a map, not a slice of mostly holes
			ii.byNumber = make(map[int]int32, len(in.Pairs))
			ii.pairs = make([]pairIndex, len(in.Pairs))
		} else {
			ii.pairs = make([]pairIndex, top+1)
		}
		for k, pp := range in.Pairs {
			code := uint8(orderCodeAB)
			if pp.Order == pairbench.BA {
				code = orderCodeBA
			}
			at := pp.Pair
			if ii.byNumber != nil {
				ii.byNumber[pp.Pair] = int32(k)
				at = k
			}
			ii.pairs[at].orderCode = code
		}
		x.intents[in.ID] = ii
	}
	return x
}

// intent returns the planned intent id's index, nil for an intent the plan
// does not have.
func (x *planRowsIndex) intent(id string) *intentIndex {
	if x.last != nil && id == x.lastID {
		return x.last
	}
	in := x.intents[id]
	if in != nil {
		x.lastID, x.last = id, in
	}
	return in
}

// pair returns pair number n's index, nil for a pair the plan does not
// have.
func (in *intentIndex) pair(n int) *pairIndex {
	if in.byNumber != nil {
		k, ok := in.byNumber[n]
		if !ok {
			return nil
		}
		return &in.pairs[k]
	}
	if n < 0 || n >= len(in.pairs) || in.pairs[n].orderCode == 0 {
		return nil
	}
	return &in.pairs[n]
}

// attemptBit is the bit of r's attempt in pairIndex.kept, and false for a
// row the index does not keep: another arm than the two, or an attempt
// out of 0 to 63.
func attemptBit(r *pairbench.Row) (uint64, bool) {
	if (r.Arm != pairbench.Control && r.Arm != pairbench.Treatment) || r.Attempt < 0 || r.Attempt >= 64 {
		return 0, false
	}
	return 1 << uint(r.Attempt), true
}
