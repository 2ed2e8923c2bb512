package runner

import (
	"fmt"
	"math/rand/v2"

	"github.com/pairbench/pairbench/stats"
)

// PairsPerIntent is the most pairs any of p's intents plans (every intent
// plans the same number in a plan NewPlan made).
func (p *Plan) PairsPerIntent() int {
	n := 0
	for _, in := range p.Intents {
		n = max(n, len(in.Pairs))
	}
	return n
}

// TopUp returns a copy of p planned for pairs per intent: every intent
// keeps its planned pairs and gains pairs numbered on from them, their
// orders balanced among themselves and drawn from the plan's seed and the
// look they form. Looks records the run's looks: the pairs per intent
// before the top-up and after it, so the report decides the last look at
// its share of α (Design). Fewer pairs than planned are refused: a run
// never drops a planned pair.
func (p *Plan) TopUp(pairs int) (*Plan, error) {
	have := p.PairsPerIntent()
	if pairs < have {
		return nil, fmt.Errorf("run %s plans %d pairs per intent and a resume cannot drop planned pairs; resume with --pairs %d, or more to top it up", p.RunID, have, have)
	}
	q := *p
	if pairs == have {
		return &q, nil
	}
	q.Looks = append(append([]int(nil), p.Looks...), pairs)
	if len(p.Looks) == 0 {
		q.Looks = []int{have, pairs}
	}
	rng := rand.New(rand.NewPCG(p.Seed, uint64(len(q.Looks))))
	q.Intents = append([]PlannedIntent(nil), p.Intents...)
	for i := range q.Intents {
		in := &q.Intents[i]
		from := len(in.Pairs)
		in.Pairs = append([]PlannedPair(nil), in.Pairs...)
		for j, o := range Orders(pairs-from, rng) {
			in.Pairs = append(in.Pairs, PlannedPair{Pair: from + j, Order: o})
		}
	}
	return &q, nil
}

// Design is the group-sequential design the run's looks form: each look's
// pairs as a fraction of the last's, with no futility bound (a look before
// the last has already been passed). Nil for a run of one look.
func (p *Plan) Design() *stats.Design {
	if len(p.Looks) < 2 {
		return nil
	}
	last := float64(p.Looks[len(p.Looks)-1])
	d := &stats.Design{}
	for _, n := range p.Looks {
		d.Looks = append(d.Looks, float64(n)/last)
	}
	return d
}

// checkLooks reports what is wrong with p's looks: they must be ascending
// pair counts, the last no fewer than any intent's pairs.
func (p *Plan) checkLooks() error {
	if len(p.Looks) == 0 {
		return nil
	}
	prev := 0
	for _, n := range p.Looks {
		if n <= prev {
			return fmt.Errorf("looks %v: want ascending numbers of pairs of at least 1", p.Looks)
		}
		prev = n
	}
	if have := p.PairsPerIntent(); prev < have {
		return fmt.Errorf("looks %v: the last look is at %d pairs, the plan has %d", p.Looks, prev, have)
	}
	return nil
}
