package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

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

// ErrTooManyAborts stops a run whose trials keep aborting: an outage or a
// runner bug would otherwise abort every remaining trial.
var ErrTooManyAborts = errors.New("too many consecutive aborted trials")

// AbortLimit is the number of consecutive aborted trials that stops a run
// with the given number of slots: max(6, 2×slots).
func AbortLimit(slots int) int { return max(6, 2*slots) }

// JobFunc runs one job and reports how many of its trials ended scored and
// how many aborted, in the order they ran. An error stops the whole queue.
type JobFunc func(ctx context.Context, job Job) (aborted []bool, err error)

// RunQueue runs jobs over slots workers, in order, never two jobs with the
// same non-empty Profile at once. It stops starting jobs when ctx is done,
// when a job returns an error (returned), or after AbortLimit(slots)
// consecutive aborted trials (ErrTooManyAborts). It waits for running jobs
// before it returns.
func RunQueue(ctx context.Context, slots int, jobs []Job, run JobFunc) error {
	if slots < 1 {
		return fmt.Errorf("slots = %d; want at least 1", slots)
	}
	q := &queue{jobs: jobs, busy: make(map[string]bool), limit: AbortLimit(slots)}
	q.cond = sync.NewCond(&q.mu)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.stopped = true
		q.mu.Unlock()
		q.cond.Broadcast()
	})
	defer stop()

	var wg sync.WaitGroup
	for range slots {
		wg.Go(func() {
			for {
				job, ok := q.next(ctx)
				if !ok {
					return
				}
				aborted, err := run(ctx, job)
				q.done(job, aborted, err)
				if err != nil {
					cancel()
				}
			}
		})
	}
	wg.Wait()
	if q.err != nil {
		return q.err
	}
	return ctx.Err()
}

type queue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	jobs    []Job
	busy    map[string]bool
	streak  int
	limit   int
	stopped bool
	err     error
}

// next blocks until a job whose profile is free can start, and takes it. It
// returns false when the queue is empty or stopped, or ctx is done.
func (q *queue) next(ctx context.Context) (Job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if q.stopped || ctx.Err() != nil || q.err != nil || len(q.jobs) == 0 {
			return Job{}, false
		}
		for i, j := range q.jobs {
			if j.Profile != "" && q.busy[j.Profile] {
				continue
			}
			q.jobs = append(q.jobs[:i:i], q.jobs[i+1:]...)
			if j.Profile != "" {
				q.busy[j.Profile] = true
			}
			return j, true
		}
		q.cond.Wait()
	}
}

func (q *queue) done(job Job, aborted []bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if job.Profile != "" {
		delete(q.busy, job.Profile)
	}
	for _, a := range aborted {
		if a {
			q.streak++
		} else {
			q.streak = 0
		}
	}
	switch {
	case err != nil && q.err == nil:
		q.err = fmt.Errorf("%s: %w", job, err)
	case q.streak >= q.limit && q.err == nil:
		q.err = fmt.Errorf("%w: %d in a row", ErrTooManyAborts, q.streak)
	}
	q.cond.Broadcast()
}
