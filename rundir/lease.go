package rundir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"syscall"
	"time"

	"github.com/pairbench/pairbench/artifacts"
)

// A run (or one shard of it) has one runner at a time across every machine
// that shares its store: the runner holds the run's lease, a small record
// in the store that it renews while it runs, written only by conditional
// writes (artifacts.Versioned). A second runner finds the lease fresh and
// refuses at once, before it spends anything; a runner that died stops
// renewing, and after LeaseTTL the next runner takes the lease over. The
// lease is never in the run directory: it is the store's.

// LeaseTTL is how long a lease holds without renewal; it is renewed every
// LeaseTTL/4.
const LeaseTTL = 2 * time.Minute

// LeaseFileOf is the store's run-relative lease of shard k (0: the run).
func LeaseFileOf(k int) string {
	if k == 0 {
		return "lease.json"
	}
	return path.Join(shardsDir, strconv.Itoa(k), "lease.json")
}

// leaseRecord is what a lease holds.
type leaseRecord struct {
	Holder    string    `json:"holder"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	RenewedAt time.Time `json:"renewed_at"`
	TTLSecs   float64   `json:"ttl_seconds"`
}

// deadHere reports whether the record's holder was a process of this host
// that is gone (a runner killed and restarted here, the service after a
// crash): its lease need not wait out its TTL.
func (l leaseRecord) deadHere() bool {
	host, _ := os.Hostname()
	if l.Host == "" || l.Host != host || l.PID <= 0 {
		return false
	}
	return errors.Is(syscall.Kill(l.PID, 0), syscall.ESRCH)
}

func (l leaseRecord) expires() time.Time {
	return l.RenewedAt.Add(time.Duration(l.TTLSecs * float64(time.Second)))
}

// Lease is a run's lease, held.
type Lease struct {
	store   artifacts.Versioned
	key     string
	holder  string
	ttl     time.Duration
	now     func() time.Time
	version string
	// TookOver is the holder whose stale lease this one replaced, "" for none.
	TookOver string
}

// HeldError is the error of a runner that finds run RunID's lease held.
type HeldError struct {
	RunID, Store, Holder string
	Shard                int
	RenewedAt, Expires   time.Time
}

func (e *HeldError) Error() string {
	what := "run " + e.RunID
	if e.Shard > 0 {
		what = fmt.Sprintf("shard %d of run %s", e.Shard, e.RunID)
	}
	return fmt.Sprintf("%s is being run by another runner (%s; its lease in %s was renewed at %s): a second runner would run, and pay for, the same pairs. Wait for it to end; if it died, its lease goes stale at %s and the next runner takes over",
		what, e.Holder, e.Store, e.RenewedAt.UTC().Format(time.RFC3339), e.Expires.UTC().Format(time.RFC3339))
}

// ErrLeaseLost is wrapped by Renew's error when another runner took the
// lease over (this one stopped renewing for longer than its TTL).
var ErrLeaseLost = errors.New("another runner took the run's lease over")

// LeaseHolder names this process for a lease: host and process id.
func LeaseHolder() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s pid %d", host, os.Getpid())
}

// AcquireLease takes the lease of shard k of run runID in store for
// holder, or fails with a *HeldError when another holder's lease is fresh.
// A stale lease is taken over (Lease.TookOver names its holder). A store
// that cannot write conditionally has no lease: nil, nil.
func AcquireLease(ctx context.Context, store artifacts.Store, runID string, k int, holder string, now func() time.Time) (*Lease, error) {
	vs, ok := store.(artifacts.Versioned)
	if !ok {
		return nil, nil
	}
	l := &Lease{store: vs, key: StoreKey(runID, LeaseFileOf(k)), holder: holder, ttl: LeaseTTL, now: now}
	for try := 0; try < 5; try++ {
		data, version, err := vs.GetVersion(ctx, l.key)
		if errors.Is(err, artifacts.ErrNotExist) {
			version = ""
		} else if err != nil {
			return nil, fmt.Errorf("read the run's lease: %w", err)
		} else {
			var rec leaseRecord
			if json.Unmarshal(data, &rec) == nil && rec.Holder != holder && now().Before(rec.expires()) && !rec.deadHere() {
				return nil, &HeldError{RunID: runID, Shard: k, Store: fmt.Sprint(store), Holder: rec.Holder,
					RenewedAt: rec.RenewedAt, Expires: rec.expires()}
			}
			if rec.Holder != holder {
				l.TookOver = rec.Holder
			}
		}
		l.version = version
		err = l.write(ctx)
		if errors.Is(err, artifacts.ErrPrecondition) {
			continue // another runner wrote it meanwhile: look again
		}
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	return nil, fmt.Errorf("run %s: the lease in %v changed five times while this runner tried to take it", runID, store)
}

// write writes the lease renewed now, if the stored one is still the one
// this Lease last read or wrote.
func (l *Lease) write(ctx context.Context) error {
	host, _ := os.Hostname()
	b, err := json.Marshal(leaseRecord{Holder: l.holder, Host: host, PID: os.Getpid(), RenewedAt: l.now().UTC(), TTLSecs: l.ttl.Seconds()})
	if err != nil {
		return err
	}
	v, err := l.store.PutIf(ctx, l.key, b, l.version)
	if err != nil {
		return fmt.Errorf("write the run's lease: %w", err)
	}
	l.version = v
	return nil
}

// Renew renews the lease; an error wrapping ErrLeaseLost says another
// runner holds it now.
func (l *Lease) Renew(ctx context.Context) error {
	err := l.write(ctx)
	if !errors.Is(err, artifacts.ErrPrecondition) {
		return err
	}
	// A write that reached the store and whose answer was lost, tried
	// again by the store's client, finds its own record: still ours.
	data, version, gerr := l.store.GetVersion(ctx, l.key)
	var rec leaseRecord
	if gerr == nil && json.Unmarshal(data, &rec) == nil && rec.Holder == l.holder {
		l.version = version
		return nil
	}
	return fmt.Errorf("%w: %w", ErrLeaseLost, err)
}

// Keep renews the lease every LeaseTTL/4 until ctx ends, and calls lost
// (once) when it was taken over. A renewal that fails otherwise (the store
// unreachable for a moment) is tried again at the next tick.
func (l *Lease) Keep(ctx context.Context, lost func(error)) {
	tick := time.NewTicker(l.ttl / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := l.Renew(ctx); errors.Is(err, ErrLeaseLost) {
				lost(err)
				return
			}
		}
	}
}

// Release gives the lease up: it is removed if it is still this one's.
func (l *Lease) Release(ctx context.Context) error {
	_, version, err := l.store.GetVersion(ctx, l.key)
	if err != nil || version != l.version {
		return nil // gone, or another's now
	}
	return l.store.Delete(ctx, l.key)
}
