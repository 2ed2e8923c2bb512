package bot_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/state"
)

// progressRunner is a local backend that reports progress as fast as its
// trials end, timing each call of the hook.
type progressRunner struct {
	start, stop chan struct{}
	calls       chan time.Duration
}

func (r *progressRunner) Run(ctx context.Context, _ bot.Request, progress func(done, total int)) error {
	close(r.start)
	<-r.stop
	for done := 1; done <= 20; done++ {
		t0 := time.Now()
		progress(done, 20)
		r.calls <- time.Since(t0)
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestABlockedStoreDoesNotStallTrials: the engine calls the progress hook
// under its lock, so every slot waits for it. While the service's database
// is blocked (a long transaction holds it), the hook returns at once each
// time; the count reaches the record once the database is free. The hook
// used to run a transaction with no timeout, stalling every slot behind it.
func TestABlockedStoreDoesNotStallTrials(t *testing.T) {
	t.Parallel()
	r := &progressRunner{start: make(chan struct{}), stop: make(chan struct{}), calls: make(chan time.Duration, 20)}
	f := newFixture(t, func(c *bot.Config) { c.Runner = r })
	f.opened(t, nil)
	<-r.start

	held, release := make(chan struct{}), make(chan struct{})
	blocked := make(chan error, 1)
	go func() {
		blocked <- f.bot.State().Update(context.Background(), func(tx *state.Tx) error {
			if err := tx.RecordReply(context.Background(), repoName, prNumber, "dba", "block"); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	close(r.stop)
	for range 20 {
		select {
		case d := <-r.calls:
			assert.Less(t, d, 100*time.Millisecond, "the hook waited for the database")
		case <-time.After(10 * time.Second):
			close(release)
			t.Fatal("a trial stalled behind the blocked database")
		}
	}
	close(release)
	require.NoError(t, <-blocked)
	require.Eventually(t, func() bool { return f.benches(t)[0].DonePairs == 20 }, 20*time.Second, 20*time.Millisecond,
		"the latest count is recorded once the database is free")
}
