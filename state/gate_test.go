package state

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waiting reports how many urgent and other acquirers wait.
func (g *writeGate) waiting() (urgent, normal int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.urgent), len(g.normal)
}

func TestTheWriteGateLetsTheUrgentGoFirst(t *testing.T) {
	g := &writeGate{}
	ctx := t.Context()
	require.NoError(t, g.acquire(ctx, false))

	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	enter := func(name string, urgent bool) {
		wg.Go(func() {
			require.NoError(t, g.acquire(ctx, urgent))
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			g.release()
		})
	}
	enter("river-1", false)
	require.Eventually(t, func() bool { _, n := g.waiting(); return n == 1 }, 5*time.Second, time.Millisecond)
	enter("river-2", false)
	require.Eventually(t, func() bool { _, n := g.waiting(); return n == 2 }, 5*time.Second, time.Millisecond)
	enter("accept", true)
	require.Eventually(t, func() bool { u, _ := g.waiting(); return u == 1 }, 5*time.Second, time.Millisecond)

	g.release()
	wg.Wait()
	assert.Equal(t, []string{"accept", "river-1", "river-2"}, order, "the urgent waiter first, the others in their order")
	require.NoError(t, g.acquire(ctx, false), "free again")
}

func TestAWriteGateWaiterGivesUpWithItsContext(t *testing.T) {
	g := &writeGate{}
	require.NoError(t, g.acquire(t.Context(), false))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, g.acquire(ctx, true), context.DeadlineExceeded)
	u, n := g.waiting()
	assert.Zero(t, u+n, "the waiter left the queue")
	g.release()
	got := make(chan error, 1)
	go func() { got <- g.acquire(t.Context(), false) }()
	select {
	case err := <-got:
		assert.NoError(t, err, "the gate is free, not held for the waiter that gave up")
	case <-time.After(5 * time.Second):
		t.Fatal("the gate stayed held")
	}
}
