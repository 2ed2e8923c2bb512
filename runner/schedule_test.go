package runner

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

func TestOrdersBalancedAndSeeded(t *testing.T) {
	for n := 0; n <= 13; n++ {
		orders := rundir.Orders(n, rand.New(rand.NewPCG(7, uint64(n))))
		require.Len(t, orders, n)
		ab := 0
		for _, o := range orders {
			if o == pairbench.AB {
				ab++
			}
		}
		assert.LessOrEqual(t, abs(2*ab-n), 1, "n=%d: %d AB of %d", n, ab, n)
		again := rundir.Orders(n, rand.New(rand.NewPCG(7, uint64(n))))
		assert.Equal(t, orders, again, "same seed, same orders")
	}
	a := rundir.Orders(20, rand.New(rand.NewPCG(1, 1)))
	b := rundir.Orders(20, rand.New(rand.NewPCG(2, 2)))
	assert.NotEqual(t, a, b, "different seeds should shuffle differently")
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func row(intent string, pair int, arm pairbench.Arm, attempt int, out pairbench.Outcome) pairbench.Row {
	return pairbench.Row{V: 1, Intent: intent, Stage: pairbench.StagePair, Pair: pair, Order: pairbench.AB,
		Arm: arm, Attempt: attempt, Outcome: out}
}

func TestPendingResumesOnlyUnscoredPairs(t *testing.T) {
	pairs := []rundir.PairSpec{
		{Intent: "a", Pair: 0, Order: pairbench.AB}, {Intent: "a", Pair: 1, Order: pairbench.BA},
		{Intent: "a", Pair: 2, Order: pairbench.AB}, {Intent: "b", Pair: 0, Order: pairbench.BA},
		{Intent: "b", Pair: 1, Order: pairbench.AB},
	}
	rows := []pairbench.Row{
		// a/0 complete.
		row("a", 0, pairbench.Control, 1, pairbench.Correct),
		row("a", 0, pairbench.Treatment, 1, pairbench.Wrong),
		// a/1: treatment aborted on attempt 1, rerun at attempt 2 only half done.
		row("a", 1, pairbench.Control, 1, pairbench.Correct),
		row("a", 1, pairbench.Treatment, 1, pairbench.Aborted),
		row("a", 1, pairbench.Control, 2, pairbench.Correct),
		// b/0: only control ran (runner killed mid-pair).
		row("b", 0, pairbench.Control, 1, pairbench.Timeout),
		// An adoption row never completes a pair.
		{V: 1, Intent: "b", Stage: pairbench.StageAdoption, Pair: 1, Arm: pairbench.Treatment, Attempt: 1, Outcome: pairbench.Correct},
	}
	jobs := rundir.Pending(pairs, rows)
	var got []string
	for _, j := range jobs {
		got = append(got, j.String())
	}
	// Interleaved: a's first pending, b's first pending, then the rest.
	assert.Equal(t, []string{"a pair 1 (BA)", "b pair 0 (BA)", "a pair 2 (AB)", "b pair 1 (AB)"}, got)
	attempts := map[string]int{}
	for _, j := range jobs {
		attempts[j.String()] = j.Attempt
	}
	assert.Equal(t, 3, attempts["a pair 1 (BA)"], "a rerun follows the highest attempt recorded")
	assert.Equal(t, 2, attempts["b pair 0 (BA)"])
	assert.Equal(t, 1, attempts["a pair 2 (AB)"])
}

func TestShardPartitionsPairs(t *testing.T) {
	var pairs []rundir.PairSpec
	for _, in := range []string{"x", "y", "z"} {
		for p := range 7 {
			pairs = append(pairs, rundir.PairSpec{Intent: in, Pair: p})
		}
	}
	seen := map[pairbench.Key]int{}
	for k := 1; k <= 3; k++ {
		shard, err := rundir.Shard(pairs, k, 3)
		require.NoError(t, err)
		assert.NotEmpty(t, shard)
		for _, p := range shard {
			seen[pairbench.Key{Intent: p.Intent, Pair: p.Pair}]++
		}
	}
	assert.Len(t, seen, len(pairs), "every pair is in some shard")
	for k, n := range seen {
		assert.Equal(t, 1, n, "%v is in %d shards", k, n)
	}
	_, err := rundir.Shard(pairs, 4, 3)
	assert.Error(t, err)
	_, err = rundir.Shard(pairs, 0, 3)
	assert.Error(t, err)
}

func TestRunQueueNeverSharesAProfile(t *testing.T) {
	var jobs []rundir.Job
	for i := range 24 {
		profile := ""
		if i%2 == 0 {
			profile = []string{"p1", "p2"}[i%4/2]
		}
		jobs = append(jobs, rundir.Job{Intent: "i", Pair: i, Profile: profile})
	}
	var mu sync.Mutex
	inUse := map[string]int{}
	var maxRunning, running atomic.Int32
	var ran atomic.Int32
	err := RunQueue(context.Background(), 3, jobs, func(ctx context.Context, j rundir.Job) ([]bool, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := maxRunning.Load()
			if n <= m || maxRunning.CompareAndSwap(m, n) {
				break
			}
		}
		if j.Profile != "" {
			mu.Lock()
			inUse[j.Profile]++
			assert.Equal(t, 1, inUse[j.Profile], "profile %s used by two jobs at once", j.Profile)
			mu.Unlock()
			defer func() { mu.Lock(); inUse[j.Profile]--; mu.Unlock() }()
		}
		time.Sleep(2 * time.Millisecond)
		ran.Add(1)
		return []bool{false, false}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, int32(len(jobs)), ran.Load())
	assert.Equal(t, int32(3), maxRunning.Load(), "free slots are filled by jobs without a busy profile")
}

func TestRunQueueStopsAfterConsecutiveAborts(t *testing.T) {
	jobs := make([]rundir.Job, 20)
	for i := range jobs {
		jobs[i] = rundir.Job{Intent: "i", Pair: i}
	}
	var ran atomic.Int32
	err := RunQueue(context.Background(), 1, jobs, func(ctx context.Context, j rundir.Job) ([]bool, error) {
		ran.Add(1)
		if j.Pair < 2 {
			return []bool{false, false}, nil
		}
		return []bool{true}, nil // the first trial aborted, so the second never ran
	})
	require.ErrorIs(t, err, ErrTooManyAborts)
	assert.Equal(t, int32(2+AbortLimit(1)), ran.Load(), "stops right at the limit")

	// A scored trial resets the streak.
	ran.Store(0)
	err = RunQueue(context.Background(), 1, jobs, func(ctx context.Context, j rundir.Job) ([]bool, error) {
		ran.Add(1)
		return []bool{true, false}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, int32(len(jobs)), ran.Load())
}

func TestRunQueueStopsOnCancelAndError(t *testing.T) {
	jobs := make([]rundir.Job, 50)
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int32
	err := RunQueue(ctx, 2, jobs, func(ctx context.Context, j rundir.Job) ([]bool, error) {
		if ran.Add(1) == 3 {
			cancel()
		}
		return []bool{false}, nil
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.LessOrEqual(t, ran.Load(), int32(4), "no job starts after cancel (at most the other slot's)")

	boom := errors.New("boom")
	ran.Store(0)
	err = RunQueue(context.Background(), 2, jobs, func(ctx context.Context, j rundir.Job) ([]bool, error) {
		if ran.Add(1) == 2 {
			return nil, boom
		}
		return []bool{false}, nil
	})
	require.ErrorIs(t, err, boom)
	assert.Less(t, ran.Load(), int32(len(jobs)))
	assert.Error(t, RunQueue(context.Background(), 0, jobs, nil))
}
