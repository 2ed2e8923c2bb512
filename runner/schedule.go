package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/pairbench/pairbench/rundir"
)

// ErrTooManyAborts stops a run whose trials keep aborting: an outage or a
// runner bug would otherwise abort every remaining trial.
var ErrTooManyAborts = errors.New("too many consecutive aborted trials")

// AbortLimit is the number of consecutive aborted trials that stops a run
// with the given number of slots: max(6, 2×slots).
func AbortLimit(slots int) int { return max(6, 2*slots) }

// JobFunc runs one job and reports how many of its trials ended scored and
// how many aborted, in the order they ran. An error stops the whole queue.
type JobFunc func(ctx context.Context, job rundir.Job) (aborted []bool, err error)

// RunQueue runs jobs over slots workers, in order, never two jobs with the
// same non-empty Profile at once. It stops starting jobs when ctx is done,
// when a job returns an error (returned), or after AbortLimit(slots)
// consecutive aborted trials (ErrTooManyAborts). It waits for running jobs
// before it returns.
func RunQueue(ctx context.Context, slots int, jobs []rundir.Job, run JobFunc) error {
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
	jobs    []rundir.Job
	busy    map[string]bool
	streak  int
	limit   int
	stopped bool
	err     error
}

// next blocks until a job whose profile is free can start, and takes it. It
// returns false when the queue is empty or stopped, or ctx is done.
func (q *queue) next(ctx context.Context) (rundir.Job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if q.stopped || ctx.Err() != nil || q.err != nil || len(q.jobs) == 0 {
			return rundir.Job{}, false
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

func (q *queue) done(job rundir.Job, aborted []bool, err error) {
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
