package rundir

import (
	"github.com/pairbench/pairbench"
)

// Status is how far a whole run is, from its plan and its rows: what is
// done, what was given up, and what a runner still has to run.
type Status struct {
	// Planned counts the planned pairs of every shard.
	Planned int
	// Done counts pairs with both arms scored; GivenUp those whose trials
	// aborted in every attempt a pair may have; Dropped those of domains
	// the adoption stage dropped (no adoption trial used a tool).
	Done, GivenUp, Dropped int
	// Pending counts the pairs still to run (and counts every pair of a
	// domain whose adoption stage is not over): a run with Pending > 0 is
	// not finished, and its report is not a verdict.
	Pending int
	// NotBenched lists, in plan order, the intents that could not be
	// benched: every one of their pairs was given up.
	NotBenched []string
}

// Finished reports whether nothing of the run is left to run.
func (s Status) Finished() bool { return s.Pending == 0 }

// StatusCounter counts a run's Status as its rows stream past, in little
// memory: one small record per planned pair.
type StatusCounter struct {
	plan     *Plan
	tally    *Tally
	adoption []pairbench.Row // adoption-stage rows of the run's id
}

// NewStatusCounter returns a counter for plan's whole run, every shard.
func NewStatusCounter(plan *Plan) *StatusCounter {
	pairs := plan.PairsInForce()
	return &StatusCounter{plan: plan, tally: NewTallyLimit(pairs, nil, plan.PairAttempts())}
}

// Add counts one row of the run (rows of another run id are the caller's to
// leave out).
func (c *StatusCounter) Add(r *pairbench.Row) {
	if r.Stage == pairbench.StageAdoption {
		c.adoption = append(c.adoption, *r)
		return
	}
	c.tally.Add(*r)
}

// Status returns the status of the rows counted so far.
func (c *StatusCounter) Status() Status {
	st := Status{Planned: c.tally.Pairs(), Done: c.tally.Done()}
	dropped := map[string]bool{}
	if n := c.plan.AdoptionTrials(); n > 0 {
		pairs := c.tally.Specs()
		stageOpen := map[string]bool{}
		for _, j := range AdoptionJobs(c.plan, pairs, n, c.adoption, c.plan.PairAttempts()) {
			stageOpen[j.Domain] = true
		}
		_, out := AdoptedPairs(pairs, c.adoption)
		for _, d := range out {
			if !stageOpen[d] {
				dropped[d] = true
			}
		}
	}
	benched := map[string]bool{}
	var order []string
	for i := range c.tally.specs {
		p := c.tally.spec(i)
		pt := &c.tally.pairs[i]
		if _, seen := benched[p.Intent]; !seen {
			order = append(order, p.Intent)
			benched[p.Intent] = false
		}
		switch {
		case pt.isDone():
			benched[p.Intent] = true
		case dropped[p.Domain]:
			st.Dropped++
			benched[p.Intent] = true // a result: the agent did not use the tools
		case c.tally.givenUp(pt):
			st.GivenUp++
		default:
			st.Pending++
			benched[p.Intent] = true
		}
	}
	for _, id := range order {
		if !benched[id] {
			st.NotBenched = append(st.NotBenched, id)
		}
	}
	return st
}

// PairAttempts is how many attempts of a pair may abort before it is given
// up, as planned (DefaultPairAttempts for a plan that did not say).
func (p *Plan) PairAttempts() int {
	if p.Trial != nil && p.Trial.PairAttempts > 0 {
		return p.Trial.PairAttempts
	}
	return DefaultPairAttempts
}

// AdoptionTrials is how many adoption trials each domain runs, as planned.
func (p *Plan) AdoptionTrials() int {
	if p.Trial == nil {
		return 0
	}
	return p.Trial.Adoption
}
