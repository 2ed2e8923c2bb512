package rundir

import "github.com/pairbench/pairbench"

// Tally follows how far a run's planned pairs are as their rows arrive. It
// is the one count of finished pairs: the schedule (Pending), progress
// displays and the service's check run all read it.
//
// A pair is done once each arm has a scored trial. The schedule reruns a
// pair whole after an aborted trial, and runs a pair's second trial only
// after its first scored in the same attempt, so a done pair's two scored
// trials belong to one attempt.
//
// A pair whose trials aborted in attempts different attempts (its
// attempt limit, DefaultPairAttempts unless set) is given up: it is not
// pending, so no resume pays for it again, and the report counts it as lost
// to aborts.
//
// A report follows 500,000 pairs with it: the pairs are two slices in plan
// order, found through a PairIndex of pair numbers to their index,
// and none holds a pointer for the collector to scan (a pair's names are
// numbers in a table of names).
type Tally struct {
	specs    []packedSpec // the planned pairs, in plan order
	names    []string     // the names packedSpec numbers
	pairs    []pairTally  // their state, at the same index
	index    *PairIndex
	done     int
	attempts int
}

// packedSpec is a PairSpec whose strings are indexes into Tally.names.
type packedSpec struct {
	intent, domain, order, profile uint32
	pair                           int
}

// spec is the planned pair at index i.
func (t *Tally) spec(i int) PairSpec {
	s := t.specs[i]
	return PairSpec{Intent: t.names[s.intent], Domain: t.names[s.domain], Pair: s.pair,
		Order: pairbench.Order(t.names[s.order]), Profile: t.names[s.profile]}
}

// Specs returns the planned pairs, in plan order.
func (t *Tally) Specs() []PairSpec {
	out := make([]PairSpec, len(t.specs))
	for i := range out {
		out[i] = t.spec(i)
	}
	return out
}

// DefaultPairAttempts is how many attempts of a pair may abort before the
// pair is given up: its first run and one rerun.
const DefaultPairAttempts = 2

// pairTally is one pair's state.
type pairTally struct {
	scored [2]bool // an arm has a scored trial in some attempt
	// attempt is the highest attempt recorded; latest counts the arms scored
	// in it, and aborted says one of its trials aborted (the pair then runs
	// again whole).
	attempt, latest int
	aborted         bool
	// abortedIn are the attempts in which a trial aborted.
	abortedIn map[int]bool
}

// NewTally returns the tally of pairs after rows. Rows of other pairs, and
// adoption rows, are not counted.
func NewTally(pairs []PairSpec, rows []pairbench.Row) *Tally {
	return NewTallyLimit(pairs, rows, DefaultPairAttempts)
}

// NewTallyLimit is NewTally for a run whose pairs may abort in at most
// attempts attempts (the plan's PairAttempts; 0 means the default).
func NewTallyLimit(pairs []PairSpec, rows []pairbench.Row, attempts int) *Tally {
	if attempts <= 0 {
		attempts = DefaultPairAttempts
	}
	t := &Tally{specs: make([]packedSpec, 0, len(pairs)), index: NewPairIndex(), attempts: attempts}
	numbers := map[string]uint32{}
	number := func(name string) uint32 {
		n, ok := numbers[name]
		if !ok {
			n = uint32(len(t.names))
			numbers[name] = n
			t.names = append(t.names, name)
		}
		return n
	}
	for _, p := range pairs {
		if _, dup := t.index.Get(p.Intent, p.Pair); dup {
			continue
		}
		t.index.Set(p.Intent, p.Pair, int32(len(t.specs)))
		t.specs = append(t.specs, packedSpec{intent: number(p.Intent), domain: number(p.Domain), pair: p.Pair,
			order: number(string(p.Order)), profile: number(p.Profile)})
	}
	t.pairs = make([]pairTally, len(t.specs))
	for _, r := range rows {
		t.Add(r)
	}
	return t
}

// pair returns the state of pair k, nil for a pair not planned.
func (t *Tally) pair(k pairbench.Key) *pairTally {
	i, ok := t.index.Get(k.Intent, k.Pair)
	if !ok {
		return nil
	}
	return &t.pairs[i]
}

// Add counts one row.
func (t *Tally) Add(r pairbench.Row) {
	p := t.pair(r.Key())
	if p == nil || r.Stage != pairbench.StagePair {
		return
	}
	wasDone := p.isDone()
	if r.Attempt > p.attempt {
		p.attempt, p.latest, p.aborted = r.Attempt, 0, false
	}
	if r.Outcome.Scored() {
		p.scored[armIndex(r.Arm)] = true
	} else {
		if p.abortedIn == nil {
			p.abortedIn = map[int]bool{}
		}
		p.abortedIn[r.Attempt] = true
	}
	if r.Attempt == p.attempt {
		if r.Outcome.Scored() {
			p.latest++
		} else {
			p.aborted = true
		}
	}
	if !wasDone && p.isDone() {
		t.done++
	}
}

// Reserve counts the attempt of a row that was left out (not a trial of
// the plan, PlanRows) as used, scoring nothing: its trial directory
// is its own, and a rerun of its pair takes a later attempt's.
func (t *Tally) Reserve(r pairbench.Row) {
	if p := t.pair(r.Key()); p != nil && r.Stage == pairbench.StagePair && r.Attempt > p.attempt {
		p.attempt, p.latest, p.aborted = r.Attempt, 0, false
	}
}

func (p *pairTally) isDone() bool { return p.scored[0] && p.scored[1] }

// givenUp reports whether a pair that is not done has used up its attempts.
func (t *Tally) givenUp(p *pairTally) bool { return !p.isDone() && len(p.abortedIn) >= t.attempts }

// GivenUp returns how many pairs are given up: not done, their trials
// aborted in as many attempts as a pair may have.
func (t *Tally) GivenUp() int {
	n := 0
	for i := range t.pairs {
		if t.givenUp(&t.pairs[i]) {
			n++
		}
	}
	return n
}

// Unfinished returns how many pairs are still to run: neither done nor
// given up.
func (t *Tally) Unfinished() int { return len(t.specs) - t.done - t.GivenUp() }

// Benched reports, per planned intent, whether it has a done pair or one
// still to run; an intent whose every pair was given up could not be
// benched. Intents are listed in plan order.
func (t *Tally) Benched() (intents []string, benched map[string]bool) {
	benched = map[string]bool{}
	for i, s := range t.specs {
		intent := t.names[s.intent]
		if _, seen := benched[intent]; !seen {
			intents = append(intents, intent)
			benched[intent] = false
		}
		if !t.givenUp(&t.pairs[i]) {
			benched[intent] = true
		}
	}
	return intents, benched
}

// Pairs returns how many pairs are planned.
func (t *Tally) Pairs() int { return len(t.specs) }

// Done returns how many pairs are done.
func (t *Tally) Done() int { return t.done }

// Half returns how many pairs are halfway through: not done, with one arm
// scored in their latest attempt and no trial of it aborted.
func (t *Tally) Half() int {
	n := 0
	for i := range t.pairs {
		if p := &t.pairs[i]; !p.isDone() && p.latest == 1 && !p.aborted {
			n++
		}
	}
	return n
}

// Pending returns a job for every pair that is neither done nor given up,
// interleaved across intents (one pair of each intent in turn) so that a
// broken intent cannot starve the others. Each job's Attempt is one more
// than the highest attempt recorded for its pair, so a rerun never
// overwrites an earlier attempt's trial directory, and its Tries how many
// attempts may still abort.
func (t *Tally) Pending() []Job {
	byIntent := make(map[string][]Job)
	var intentOrder []string
	for i := range t.specs {
		p := &t.pairs[i]
		if p.isDone() || t.givenUp(p) {
			continue
		}
		s := t.spec(i)
		if _, ok := byIntent[s.Intent]; !ok {
			intentOrder = append(intentOrder, s.Intent)
		}
		byIntent[s.Intent] = append(byIntent[s.Intent], Job{
			Intent: s.Intent, Domain: s.Domain, Stage: pairbench.StagePair,
			Pair: s.Pair, Order: s.Order, Profile: s.Profile, Attempt: p.attempt + 1,
			Tries: t.attempts - len(p.abortedIn),
		})
	}
	return interleave(intentOrder, byIntent)
}
