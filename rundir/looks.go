package rundir

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/stats"
)

// PairsPerIntent is the most pairs any of p's intents plans (every intent
// plans the same number in a plan runner.NewPlan made).
func (p *Plan) PairsPerIntent() int {
	n := 0
	for _, in := range p.Intents {
		n = max(n, len(in.Pairs))
	}
	return n
}

// LookPairs is the pairs per intent at each look of design d for a run of
// pairs per intent over intents benched intents (placebos left out) at
// run level alpha: each look's fraction of the pairs rounded up, a look
// that rounds to an earlier one's number taken once. A look before the
// last at which the run's verdict cannot be reached at its level
// (stats.Design.MarkBlind) is blind: it spends no α and can stop the run
// only for futility, so it is kept only where the pooled tests' p over its
// pairs can fall to half the futility bound (docs/statistics.md, Looks),
// or, in a design that curtails, where some outcome of its pairs leaves
// no claim within reach at a later look (curtailable), and left out where
// too few pairs could not tell. Nil when one look is left (a fixed run),
// for a plan whose pairs can reach no claim even at alpha, or for no
// design.
func LookPairs(d *stats.Design, pairs, intents int, alpha float64) []int {
	if d == nil {
		return nil
	}
	var looks []int
	for k := range d.Looks {
		if n := d.LookPairs(pairs, k); len(looks) == 0 || n > looks[len(looks)-1] {
			looks = append(looks, n)
		}
	}
	if len(looks) < 2 {
		return nil
	}
	// Leaving out a blind look changes no other look's level: it spends
	// nothing. A design of one futility bound for every look (as runs
	// were planned before FutilityPower) keeps none.
	dd := lookDesign(looks, d.Futility, d.FutilityPower, false, d.FutilityOnly, intents, alpha, 0)
	var kept []int
	for k, n := range looks {
		if k == len(looks)-1 || !dd.Blind[k] || conditionalTells(dd, n, intents, alpha, k) || d.Curtail && curtailable(dd, looks, intents, alpha, k) {
			kept = append(kept, n)
		}
	}
	if len(kept) < 2 {
		return nil
	}
	// A plan that can reach no claim at all (run anyway, as a smoke test
	// of the harness: --allow-inconclusive) runs every pair, as asked,
	// rather than stop at its first look for lack of any.
	none := make([]stats.ReachIntent, max(1, intents))
	for i := range none {
		none[i].More = pairs
	}
	if !stats.ClaimReachable(none, alpha) {
		return nil
	}
	return kept
}

// conditionalTells reports whether the conditional-power futility bound of
// look k, at n pairs per intent, can tell anything: the pooled tests' p
// over its pairs can fall to half the bound.
func conditionalTells(d *stats.Design, n, intents int, alpha float64, k int) bool {
	return d.FutilityPower > 0 && stats.MinSignP(max(1, intents)*n) <= d.FutilityAt(alpha, k)/2
}

// curtailable reports whether some outcome of look k's pairs leaves no
// claim within reach at any later look (stats.ClaimReachable): the one in
// which no pair had a correct arm, so that every test can count only on
// the pairs after the look.
func curtailable(d *stats.Design, looks []int, intents int, alpha float64, k int) bool {
	for j := k + 1; j < len(looks); j++ {
		none := make([]stats.ReachIntent, max(1, intents))
		for i := range none {
			none[i].More = looks[j] - looks[k]
		}
		if stats.ClaimReachable(none, d.LookAlpha(alpha, j)) {
			return false
		}
	}
	return true
}

// lookDesign is the design of looks at the given pairs per intent, with
// its blind looks from look passed on marked (stats.Design.MarkBlind);
// Blind is never nil. A design that curtails marks the blind looks at
// which conditional power cannot tell anything as kept for curtailment
// alone (stats.Design.CurtailOnly). Nil for fewer than two looks.
func lookDesign(looks []int, futility, power float64, curtail, futilityOnly bool, intents int, alpha float64, passed int) *stats.Design {
	if len(looks) < 2 {
		return nil
	}
	last := float64(looks[len(looks)-1])
	d := &stats.Design{Futility: futility, FutilityPower: power, FutilityOnly: futilityOnly}
	for _, n := range looks {
		d.Looks = append(d.Looks, float64(n)/last)
	}
	d.MarkBlind(looks, intents, alpha, passed)
	if d.Blind == nil {
		d.Blind = make([]bool, len(looks))
	}
	if curtail {
		only := make([]bool, len(looks))
		for k := range looks[:len(looks)-1] {
			only[k] = d.Blind[k] && !conditionalTells(d, looks[k], intents, alpha, k)
		}
		d.Curtail = true
		if slices.Contains(only, true) {
			d.CurtailOnly = only
		}
	}
	return d
}

// LookOrders draws the orders of an intent's pairs numbered from 0,
// balanced within each look (looks: the pairs per intent at each; nil for
// one look at all of them), so that every look compares the arms in both
// orders alike.
func LookOrders(looks []int, pairs int, rng *rand.Rand) []PlannedPair {
	if len(looks) == 0 {
		looks = []int{pairs}
	}
	var out []PlannedPair
	for _, upTo := range looks {
		for _, o := range Orders(upTo-len(out), rng) {
			out = append(out, PlannedPair{Pair: len(out), Order: o})
		}
	}
	return out
}

// LastLookAlpha is the level the last look of a run planned with design
// d decides at, at run level alpha: alpha itself for a run of one look or
// of futility-only looks. The design is the one the plan takes
// (stats.Design.ForPlan). Planning checks what a run can reach at it.
func LastLookAlpha(d *stats.Design, pairs, intents int, alpha float64) float64 {
	if d == nil {
		return alpha
	}
	pd := d.ForPlan(intents, pairs, alpha)
	if dd := lookDesign(LookPairs(&pd, pairs, intents, alpha), 0, 0, false, pd.FutilityOnly, intents, alpha, 0); dd != nil {
		return dd.LookAlpha(alpha, len(dd.Looks)-1)
	}
	return alpha
}

// PairsInForce returns the planned pairs the run still holds to, of every
// intent in plan order: every planned pair, or, once the run stopped at a
// look (Stop), the pairs of the looks up to it. What counts the run's
// pairs (the schedule, Status, the report) counts these: a run that
// stopped early is complete, its skipped pairs never run nor pending.
func (p *Plan) PairsInForce() []PairSpec {
	pairs := make([]PairSpec, 0, p.PlannedPairs())
	for _, in := range p.Intents {
		for _, pp := range in.Pairs {
			if p.inForce(pp.Pair) {
				pairs = append(pairs, PairSpec{Intent: in.ID, Domain: in.Domain, Pair: pp.Pair, Order: pp.Order, Profile: in.Profile})
			}
		}
	}
	return pairs
}

// RowInForce reports whether r counts in the run: an adoption trial, or a
// trial of a pair in force (PairsInForce). A sharded run's shards run
// their pairs past the look it stops at, which merge decides: those rows
// are trials of the plan, and count in nothing.
func (p *Plan) RowInForce(r *pairbench.Row) bool {
	return r.Stage != pairbench.StagePair || p.inForce(r.Pair)
}

// inForce reports whether pair (a number; a plan of looks numbers each
// intent's pairs from 0 in look order) is in force.
func (p *Plan) inForce(pair int) bool {
	if p.Stop == nil || len(p.Looks) == 0 {
		return true
	}
	return pair < p.Looks[min(p.Stop.Look, len(p.Looks))-1]
}

// TopUp returns a copy of p planned for pairs per intent: every intent
// keeps its planned pairs and gains pairs numbered on from them, their
// orders balanced among themselves and drawn from the plan's seed and the
// look they form. Looks records the run's looks: the pairs per intent
// before the top-up and after it, so the report decides the last look at
// its share of α (Design). A run that stopped at a look claiming nothing
// goes on from the next one, the looks up to it passed (Passed); one that
// claimed a difference is refused with a *ClaimedError, since more pairs
// would test again what its α was spent on. Fewer pairs than planned are
// refused: a run never drops a planned pair.
func (p *Plan) TopUp(pairs int) (*Plan, error) {
	have := p.PairsPerIntent()
	if pairs < have {
		return nil, fmt.Errorf("run %s plans %d pairs per intent and a resume cannot drop planned pairs; resume with --pairs %d, or more to top it up", p.RunID, have, have)
	}
	q := *p
	if pairs == have {
		return &q, nil
	}
	if s := p.Stop; s != nil && s.Claimed {
		return nil, &ClaimedError{RunID: p.RunID, Looks: max(1, len(p.Looks)), Stop: *s, Pairs: pairs}
	}
	q.Looks = append(append([]int(nil), p.Looks...), pairs)
	if len(p.Looks) == 0 {
		q.Looks = []int{have, pairs}
	}
	if s := p.Stop; s != nil {
		q.Passed, q.Stop = s.Look, nil
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

// ClaimedError refuses to top up a run that already claimed a difference
// at a look: its α is spent on that claim, and testing again with more
// pairs is covered by no design (docs/statistics.md, Looks).
type ClaimedError struct {
	RunID string
	// Looks is how many looks the run has; Stop the look it stopped at.
	Looks int
	Stop  LookStop
	// Pairs is the pairs per intent asked for.
	Pairs int
}

func (e *ClaimedError) Error() string {
	claim := "an intent's label"
	if e.Stop.Kind == report.StopEfficacy {
		claim = "the verdict " + string(e.Stop.Verdict)
	}
	return fmt.Sprintf("run %s claimed a difference (%s) at look %d of %d, %d pairs per intent: its α is spent on that claim, so topping it up to %d pairs would test again what it decided, which its design does not cover; bench the change again under a new --run-id",
		e.RunID, claim, e.Stop.Look, e.Looks, e.Stop.Pairs, e.Pairs)
}

// Design is the group-sequential design the run's looks form: each look's
// pairs as a fraction of the last's, with the plan's futility bound (a
// run.json of a topped-up run from before runs took their looks has
// none), and, in a run planned with FutilityPower, its blind looks after
// the ones passed marked from the plan's benched intents and α
// (stats.Design.MarkBlind; a run planned before kept no blind look, and
// its looks spend as they did). Nil for a run of one look.
func (p *Plan) Design() *stats.Design {
	benched := 0
	for _, in := range p.Intents {
		if !in.Placebo {
			benched++
		}
	}
	d := lookDesign(p.Looks, p.Futility, p.FutilityPower, p.Curtail, p.FutilityOnly, benched, p.Alpha, p.Passed)
	if d != nil && (p.FutilityPower == 0 || !slices.Contains(d.Blind, true)) {
		d.Blind = nil
	}
	return d
}

// checkLooks reports what is wrong with p's looks: they must be ascending
// pair counts, the last no fewer than any intent's pairs, each intent's
// pairs numbered from 0 in order (a look sees the pairs numbered below
// it); the looks passed and the stop must be among them.
func (p *Plan) checkLooks() error {
	if len(p.Looks) == 0 {
		if p.Passed != 0 || p.Futility != 0 || p.FutilityPower != 0 || p.Curtail || p.FutilityOnly {
			return fmt.Errorf("passed %d, futility %v, curtail %v, futility only %v: a run of one look has none", p.Passed, max(p.Futility, p.FutilityPower), p.Curtail, p.FutilityOnly)
		}
		if s := p.Stop; s != nil && s.Look != 1 {
			return fmt.Errorf("stop at look %d: the run has one look", s.Look)
		}
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
	for _, in := range p.Intents {
		for i, pp := range in.Pairs {
			if pp.Pair != i {
				return fmt.Errorf("intent %q: pair %d is listed %d: a run of looks numbers its pairs from 0 in order", in.ID, pp.Pair, i+1)
			}
		}
	}
	if !(p.Futility >= 0 && p.Futility < 1) {
		return fmt.Errorf("futility %v: want a p value in [0, 1)", p.Futility)
	}
	if !(p.FutilityPower >= 0 && p.FutilityPower < 1) {
		return fmt.Errorf("futility power %v: want a conditional power in [0, 1)", p.FutilityPower)
	}
	if p.Passed < 0 || p.Passed >= len(p.Looks) {
		return fmt.Errorf("passed %d: want fewer than the %d looks", p.Passed, len(p.Looks))
	}
	if s := p.Stop; s != nil && (s.Look <= p.Passed || s.Look > len(p.Looks)) {
		return fmt.Errorf("stop at look %d: want a look after the %d passed, of the %d", s.Look, p.Passed, len(p.Looks))
	}
	return nil
}
