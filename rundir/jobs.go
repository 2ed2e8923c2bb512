package rundir

import (
	"fmt"
	"math/rand/v2"

	"github.com/pairbench/pairbench"
)

// Orders returns the orders of n pairs: half AB and half BA (the odd one out
// is AB or BA by the seed's first draw), shuffled by rng.
func Orders(n int, rng *rand.Rand) []pairbench.Order {
	orders := make([]pairbench.Order, n)
	first, second := pairbench.AB, pairbench.BA
	if n%2 == 1 && rng.IntN(2) == 1 {
		first, second = second, first
	}
	for i := range orders {
		if i < (n+1)/2 {
			orders[i] = first
		} else {
			orders[i] = second
		}
	}
	rng.Shuffle(n, func(i, j int) { orders[i], orders[j] = orders[j], orders[i] })
	return orders
}

// Job is one unit of scheduled work: a pair (both trials, in order) or one
// adoption trial.
type Job struct {
	Intent string
	Domain string
	Stage  pairbench.Stage
	Pair   int
	Order  pairbench.Order
	// Profile is the signed-in browser profile the job uses; jobs on one
	// profile never run at the same time. "" means none.
	Profile string
	// Attempt is the attempt number the job's trials are recorded under.
	Attempt int
	// Tries is how many attempts of the job may still abort before it is
	// given up (at least 1; 0 is read as 1).
	Tries int
}

// String names the job in logs.
func (j Job) String() string {
	if j.Stage == pairbench.StageAdoption {
		return fmt.Sprintf("%s adoption %d", j.Intent, j.Pair)
	}
	return fmt.Sprintf("%s pair %d (%s)", j.Intent, j.Pair, j.Order)
}

// PairSpec is a planned pair: what run.json freezes for each.
type PairSpec struct {
	Intent  string
	Domain  string
	Pair    int
	Order   pairbench.Order
	Profile string
}

// Pending returns the jobs of the planned pairs that still lack a scored
// trial in either arm, given the rows already recorded: Tally.Pending of
// their tally.
func Pending(pairs []PairSpec, rows []pairbench.Row) []Job { return NewTally(pairs, rows).Pending() }

// interleave takes one job of each key in turn until all are taken.
func interleave(keys []string, jobs map[string][]Job) []Job {
	var out []Job
	for i := 0; ; i++ {
		took := false
		for _, k := range keys {
			if i < len(jobs[k]) {
				out = append(out, jobs[k][i])
				took = true
			}
		}
		if !took {
			return out
		}
	}
}

func armIndex(a pairbench.Arm) int {
	if a == pairbench.Treatment {
		return 1
	}
	return 0
}

// Shard returns the pairs of shard k of n (1-based): pair i of each intent
// belongs to shard (i mod n)+1. The split depends only on the plan, so every
// runner given the same run.json computes the same shards, and each intent's
// pairs spread evenly over them.
func Shard(pairs []PairSpec, k, n int) ([]PairSpec, error) {
	if n < 1 || k < 1 || k > n {
		return nil, fmt.Errorf("shard %d/%d: want 1 <= k <= n", k, n)
	}
	var out []PairSpec
	for _, p := range pairs {
		if p.Pair%n == k-1 {
			out = append(out, p)
		}
	}
	return out, nil
}

// AdoptionJobs returns the adoption trials still to run: n per domain,
// interleaved across domains, each on the domain's first intent in the
// plan. A trial with a scored attempt counts as run, and so does one that
// aborted in limit attempts (given up); any other (it aborted, or never
// ran) runs again as its next attempt.
func AdoptionJobs(plan *Plan, pairs []PairSpec, n int, rows []pairbench.Row, limit int) []Job {
	inShard := map[string]bool{}
	for _, p := range pairs {
		inShard[p.Intent] = true
	}
	done := map[pairbench.Key]int{}
	aborted := map[pairbench.Key]map[int]bool{}
	for _, r := range rows {
		if r.Stage == pairbench.StageAdoption {
			done[r.Key()] = max(done[r.Key()], r.Attempt)
			if r.Outcome == pairbench.Aborted {
				if aborted[r.Key()] == nil {
					aborted[r.Key()] = map[int]bool{}
				}
				aborted[r.Key()][r.Attempt] = true
			}
		}
	}
	byDomain := map[string][]Job{}
	var domains []string
	for _, in := range plan.Intents {
		if !inShard[in.ID] {
			continue
		}
		if _, seen := byDomain[in.Domain]; seen {
			continue
		}
		domains = append(domains, in.Domain)
		byDomain[in.Domain] = []Job{}
		for i := range n {
			key := pairbench.Key{Intent: in.ID, Pair: i}
			if scoredAdoption(rows, key) || len(aborted[key]) >= limit {
				continue
			}
			byDomain[in.Domain] = append(byDomain[in.Domain], Job{
				Intent: in.ID, Domain: in.Domain, Stage: pairbench.StageAdoption,
				Pair: i, Profile: in.Profile, Attempt: done[key] + 1, Tries: limit - len(aborted[key]),
			})
		}
	}
	return interleave(domains, byDomain)
}

func scoredAdoption(rows []pairbench.Row, key pairbench.Key) bool {
	for _, r := range rows {
		if r.Stage == pairbench.StageAdoption && r.Key() == key && r.Outcome.Scored() {
			return true
		}
	}
	return false
}

// AdoptedPairs drops the pairs of domains whose adoption trials never
// invoked a registered tool, or all aborted, and names those domains.
func AdoptedPairs(pairs []PairSpec, rows []pairbench.Row) ([]PairSpec, []string) {
	type verdict struct{ ran, adopted bool }
	byDomain := map[string]*verdict{}
	for _, r := range rows {
		if r.Stage != pairbench.StageAdoption {
			continue
		}
		v := byDomain[r.Domain]
		if v == nil {
			v = &verdict{}
			byDomain[r.Domain] = v
		}
		if r.Outcome.Scored() {
			v.ran = true
			v.adopted = v.adopted || r.Adopted
		}
	}
	var kept []PairSpec
	var dropped []string
	seen := map[string]bool{}
	for _, p := range pairs {
		v := byDomain[p.Domain]
		if v == nil || v.adopted {
			kept = append(kept, p)
			continue
		}
		if !seen[p.Domain] {
			seen[p.Domain] = true
			dropped = append(dropped, p.Domain)
		}
	}
	return kept, dropped
}
