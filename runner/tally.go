package runner

import "github.com/pairbench/pairbench"

// Tally follows how far a run's planned pairs are as their rows arrive. It
// is the one count of finished pairs: the schedule (Pending), progress
// displays and the service's check run all read it.
//
// A pair is done once each arm has a scored trial. The schedule reruns a
// pair whole after an aborted trial, and runs a pair's second trial only
// after its first scored in the same attempt, so a done pair's two scored
// trials belong to one attempt.
type Tally struct {
	pairs map[pairbench.Key]*pairTally
	order []pairbench.Key // the planned pairs, in plan order
	specs map[pairbench.Key]PairSpec
	done  int
}

// pairTally is one pair's state.
type pairTally struct {
	scored [2]bool // an arm has a scored trial in some attempt
	// attempt is the highest attempt recorded; latest counts the arms scored
	// in it, and aborted says one of its trials aborted (the pair then runs
	// again whole).
	attempt, latest int
	aborted         bool
}

// NewTally returns the tally of pairs after rows. Rows of other pairs, and
// adoption rows, are not counted.
func NewTally(pairs []PairSpec, rows []pairbench.Row) *Tally {
	t := &Tally{pairs: make(map[pairbench.Key]*pairTally, len(pairs)), specs: make(map[pairbench.Key]PairSpec, len(pairs))}
	for _, p := range pairs {
		k := pairbench.Key{Intent: p.Intent, Pair: p.Pair}
		if _, dup := t.pairs[k]; !dup {
			t.pairs[k] = &pairTally{}
			t.order = append(t.order, k)
			t.specs[k] = p
		}
	}
	for _, r := range rows {
		t.Add(r)
	}
	return t
}

// Add counts one row.
func (t *Tally) Add(r pairbench.Row) {
	p := t.pairs[r.Key()]
	if p == nil || r.Stage != pairbench.StagePair {
		return
	}
	wasDone := p.isDone()
	if r.Attempt > p.attempt {
		p.attempt, p.latest, p.aborted = r.Attempt, 0, false
	}
	if r.Outcome.Scored() {
		p.scored[armIndex(r.Arm)] = true
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

func (p *pairTally) isDone() bool { return p.scored[0] && p.scored[1] }

// Pairs returns how many pairs are planned.
func (t *Tally) Pairs() int { return len(t.order) }

// Done returns how many pairs are done.
func (t *Tally) Done() int { return t.done }

// Half returns how many pairs are halfway through: not done, with one arm
// scored in their latest attempt and no trial of it aborted.
func (t *Tally) Half() int {
	n := 0
	for _, p := range t.pairs {
		if !p.isDone() && p.latest == 1 && !p.aborted {
			n++
		}
	}
	return n
}

// Pending returns a job for every pair that is not done, interleaved across
// intents (one pair of each intent in turn) so that a broken intent cannot
// starve the others. Each job's Attempt is one more than the highest
// attempt recorded for its pair, so a rerun never overwrites an earlier
// attempt's trial directory.
func (t *Tally) Pending() []Job {
	byIntent := make(map[string][]Job)
	var intentOrder []string
	for _, k := range t.order {
		p := t.pairs[k]
		if p.isDone() {
			continue
		}
		s := t.specs[k]
		if _, ok := byIntent[s.Intent]; !ok {
			intentOrder = append(intentOrder, s.Intent)
		}
		byIntent[s.Intent] = append(byIntent[s.Intent], Job{
			Intent: s.Intent, Domain: s.Domain, Stage: pairbench.StagePair,
			Pair: s.Pair, Order: s.Order, Profile: s.Profile, Attempt: p.attempt + 1,
		})
	}
	return interleave(intentOrder, byIntent)
}
