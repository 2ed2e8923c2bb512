package rundir

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts"
)

// TestLeaseOneRunnerAtATime: a runner takes a run's lease; a second finds
// it fresh and is refused at once, naming the holder; once the first stops
// renewing past the TTL, the next takes it over, and the first's renewal
// then says it lost it. A holder of this host whose process is gone is
// taken over at once. Shards have leases of their own.
func TestLeaseOneRunnerAtATime(t *testing.T) {
	store, err := artifacts.NewLocal(t.TempDir())
	require.NoError(t, err)
	ctx := t.Context()
	clock := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }

	a, err := AcquireLease(ctx, store, "r1", 0, "runner-a", now)
	require.NoError(t, err)
	assert.Empty(t, a.TookOver)

	_, err = AcquireLease(ctx, store, "r1", 0, "runner-b", now)
	var held *HeldError
	require.True(t, errors.As(err, &held), "%v", err)
	assert.Equal(t, "runner-a", held.Holder)
	assert.Contains(t, err.Error(), "run r1 is being run by another runner (runner-a; its lease in local:")
	assert.Contains(t, err.Error(), "if it died, its lease goes stale at 2026-12-06T05:02:00Z and the next runner takes over")

	shard, err := AcquireLease(ctx, store, "r1", 2, "runner-b", now)
	require.NoError(t, err, "shard 2 has a lease of its own")
	require.NotNil(t, shard)

	clock = clock.Add(LeaseTTL / 2)
	require.NoError(t, a.Renew(ctx))
	clock = clock.Add(LeaseTTL - time.Second)
	_, err = AcquireLease(ctx, store, "r1", 0, "runner-b", now)
	require.ErrorAs(t, err, &held, "renewed: fresh again")

	clock = clock.Add(2 * time.Second) // a stopped renewing a TTL ago
	b, err := AcquireLease(ctx, store, "r1", 0, "runner-b", now)
	require.NoError(t, err)
	assert.Equal(t, "runner-a", b.TookOver)
	assert.ErrorIs(t, a.Renew(ctx), ErrLeaseLost)
	require.NoError(t, a.Release(ctx), "a lease that is another's now is left alone")
	_, _, err = store.GetVersion(ctx, "r1/lease.json")
	require.NoError(t, err)
	require.NoError(t, b.Release(ctx))
	_, _, err = store.GetVersion(ctx, "r1/lease.json")
	assert.ErrorIs(t, err, artifacts.ErrNotExist, "released")

	// A runner of this host that was killed: its process is gone.
	host := leaseRecord{Holder: "killed", Host: hostname(t), PID: 1 << 30, RenewedAt: clock, TTLSecs: LeaseTTL.Seconds()}
	data, err := json.Marshal(host)
	require.NoError(t, err)
	_, err = store.PutIf(ctx, "r1/lease.json", data, "")
	require.NoError(t, err)
	c, err := AcquireLease(ctx, store, "r1", 0, "runner-c", now)
	require.NoError(t, err)
	assert.Equal(t, "killed", c.TookOver)
}

func hostname(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	require.NoError(t, err)
	return h
}
