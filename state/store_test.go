package state_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/state"
	"github.com/pairbench/pairbench/state/statetest"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		helperProcess()
		return
	}
	code := m.Run()
	statetest.Stop()
	os.Exit(code)
}

// deliveries records the DeliveryJobs it works.
type deliveries struct {
	river.WorkerDefaults[state.DeliveryJob]
	mu   sync.Mutex
	seen map[string]int
}

func (w *deliveries) Work(_ context.Context, j *river.Job[state.DeliveryJob]) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]int{}
	}
	w.seen[j.Args.ID]++
	return nil
}

func (w *deliveries) count(id string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[id]
}

func open(t *testing.T, cfg state.Config) *state.Store {
	t.Helper()
	s, err := state.Open(t.Context(), cfg)
	require.NoError(t, err)
	return s
}

func eachDialect(t *testing.T, fn func(t *testing.T, cfg state.Config)) {
	for _, d := range statetest.Dialects {
		t.Run(d, func(t *testing.T) { fn(t, statetest.Config(t, d)) })
	}
}

func TestAcceptedDeliveriesSurviveAReopenAndRunOnce(t *testing.T) {
	eachDialect(t, func(t *testing.T, cfg state.Config) {
		ctx := t.Context()
		s := open(t, cfg)
		d := state.Delivery{Installation: 7, ID: "d-1", Event: "pull_request", Payload: []byte(`{"a":1}`)}
		ok, err := s.Accept(ctx, d)
		require.NoError(t, err)
		assert.True(t, ok)
		ok, err = s.Accept(ctx, d)
		require.NoError(t, err)
		assert.False(t, ok, "a redelivery is refused")
		other := d
		other.Installation = 8
		ok, err = s.Accept(ctx, other)
		require.NoError(t, err)
		assert.True(t, ok, "the same id from another installation is another delivery")
		require.NoError(t, s.Close())

		// Reopened: the deliveries and their jobs are still there.
		w := &deliveries{}
		workers := river.NewWorkers()
		river.AddWorker(workers, w)
		cfg.Workers = workers
		s = open(t, cfg)
		defer s.Close()
		ok, err = s.Accept(ctx, d)
		require.NoError(t, err)
		assert.False(t, ok, "still a duplicate after the reopen")
		jobs, err := s.JobsNotFinished(ctx)
		require.NoError(t, err)
		assert.Equal(t, map[string]int{"delivery": 2}, jobs)
		require.NoError(t, s.View(ctx, func(tx *state.Tx) error {
			got, err := tx.Delivery(ctx, 7, "d-1")
			require.NoError(t, err)
			assert.Equal(t, d.Payload, got.Payload)
			assert.Equal(t, "pull_request", got.Event)
			_, err = tx.Delivery(ctx, 7, "nope")
			assert.ErrorIs(t, err, state.ErrNotFound)
			return nil
		}))

		require.NoError(t, s.Start(ctx))
		defer stop(t, s)
		require.Eventually(t, func() bool { return w.count("d-1") == 2 }, 10*time.Second, 20*time.Millisecond, "both deliveries' jobs ran")
		time.Sleep(100 * time.Millisecond)
		assert.Equal(t, 2, w.count("d-1"), "and only once each")
	})
}

func stop(t *testing.T, s *state.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	assert.NoError(t, s.Stop(ctx, ctx))
}

func TestAFailedUpdateInsertsNoJob(t *testing.T) {
	eachDialect(t, func(t *testing.T, cfg state.Config) {
		ctx := t.Context()
		s := open(t, cfg)
		defer s.Close()
		boom := errors.New("boom")
		err := s.Update(ctx, func(tx *state.Tx) error {
			_, err := tx.Enqueue(ctx, state.DeliveryJob{ID: "x"}, nil)
			require.NoError(t, err)
			require.NoError(t, tx.InsertBench(ctx, state.Bench{Run: "r1", Repo: "o/r", PR: 1, SHA: "abc", Backend: "local", State: state.BenchQueued, Created: tx.Now()}))
			return boom
		})
		require.ErrorIs(t, err, boom)
		jobs, err := s.JobsNotFinished(ctx)
		require.NoError(t, err)
		assert.Empty(t, jobs)
		require.NoError(t, s.View(ctx, func(tx *state.Tx) error {
			_, found, err := tx.Bench(ctx, "r1")
			assert.False(t, found)
			return err
		}))
	})
}

func TestRecordsRoundTrip(t *testing.T) {
	eachDialect(t, func(t *testing.T, cfg state.Config) {
		ctx := t.Context()
		s := open(t, cfg)
		defer s.Close()
		now := time.UnixMilli(time.Now().UnixMilli())
		b := state.Bench{Run: "pr2-aaa-1", Repo: "o/r", PR: 2, Installation: 9, SHA: "aaa", DefaultBranch: "main", Backend: "actions",
			Domains: []string{"books.example", "weather.example"}, Intents: []string{"x"}, Pairs: 4, Model: "m", Agent: "codex", Base: "bbb", FailOn: "worse,slower", TopUps: 2, RequestedBy: "me",
			State: state.BenchRunning, Created: now, CheckID: 55, CheckVersion: 3, CheckPosted: 2, WorkflowRunID: 777,
			WorkflowRunURL: "https://x/1", Dispatched: now, DonePairs: 1, TotalPairs: 8,
			Look: 1, Looks: 3, PlannedPairs: 24, StopLook: 1, StopKind: "futility", StopReason: "the pooled speed p 0.8 and accuracy p 1 are both above 0.3"}
		require.NoError(t, s.Update(ctx, func(tx *state.Tx) error {
			p, err := tx.LockPull(ctx, "o/r", 2)
			require.NoError(t, err)
			assert.Equal(t, state.Pull{Repo: "o/r", PR: 2}, p)
			p.HeadSHA, p.Bench, p.StickyID, p.ApprovalSHA, p.SurfaceVersion, p.Closed = "aaa", b.Run, 12, "bbb", 4, true
			require.NoError(t, tx.SavePull(ctx, p))
			return tx.InsertBench(ctx, b)
		}))
		require.NoError(t, s.View(ctx, func(tx *state.Tx) error {
			p, found, err := tx.Pull(ctx, "o/r", 2)
			require.NoError(t, err)
			require.True(t, found)
			assert.Equal(t, state.Pull{Repo: "o/r", PR: 2, HeadSHA: "aaa", Bench: b.Run, StickyID: 12, ApprovalSHA: "bbb", SurfaceVersion: 4, Closed: true}, p)
			got, found, err := tx.Bench(ctx, b.Run)
			require.NoError(t, err)
			require.True(t, found)
			assert.Equal(t, b, got)
			byRun, found, err := tx.BenchOfWorkflowRun(ctx, "o/r", 777)
			require.NoError(t, err)
			assert.True(t, found)
			assert.Equal(t, b.Run, byRun.Run)
			_, found, err = tx.BenchOfWorkflowRun(ctx, "other/r", 777)
			require.NoError(t, err)
			assert.False(t, found, "a run id is only good in its repository")
			unposted, err := tx.UnpostedChecks(ctx)
			require.NoError(t, err)
			assert.Len(t, unposted, 1)
			running, err := tx.BenchesIn(ctx, state.BenchQueued, state.BenchRunning)
			require.NoError(t, err)
			assert.Len(t, running, 1)
			return nil
		}))
	})
}

func TestLeases(t *testing.T) {
	eachDialect(t, func(t *testing.T, cfg state.Config) {
		ctx := t.Context()
		s := open(t, cfg)
		defer s.Close()
		take := func(owner string, ttl time.Duration) (ok bool) {
			require.NoError(t, s.Update(ctx, func(tx *state.Tx) (err error) {
				ok, err = tx.TakeLease(ctx, "check:r1", owner, ttl)
				return err
			}))
			return ok
		}
		assert.True(t, take("a", time.Hour))
		assert.True(t, take("a", time.Hour), "the owner renews")
		assert.False(t, take("b", time.Hour), "another owner waits")
		require.NoError(t, s.Update(ctx, func(tx *state.Tx) error { return tx.ReleaseLease(ctx, "check:r1", "a") }))
		assert.True(t, take("b", time.Millisecond))
		time.Sleep(5 * time.Millisecond)
		assert.True(t, take("c", time.Hour), "an expired lease is taken over")
	})
}

func TestRepliesAreCounted(t *testing.T) {
	eachDialect(t, func(t *testing.T, cfg state.Config) {
		ctx := t.Context()
		s := open(t, cfg)
		defer s.Close()
		start := time.Now().Add(-time.Second)
		require.NoError(t, s.Update(ctx, func(tx *state.Tx) error {
			require.NoError(t, tx.RecordReply(ctx, "o/r", 1, "u1", "refused"))
			require.NoError(t, tx.RecordReply(ctx, "o/r", 1, "u2", "refused"))
			return tx.RecordReply(ctx, "o/r", 2, "u1", "command")
		}))
		require.NoError(t, s.View(ctx, func(tx *state.Tx) error {
			for _, c := range []struct {
				pr          int
				login, kind string
				want        int
			}{{1, "", "", 2}, {1, "u1", "", 1}, {1, "u1", "command", 0}, {2, "", "command", 1}} {
				n, err := tx.Replies(ctx, "o/r", c.pr, c.login, c.kind, start)
				require.NoError(t, err)
				assert.Equal(t, c.want, n, "%+v", c)
			}
			n, err := tx.Replies(ctx, "o/r", 1, "", "", time.Now().Add(time.Hour))
			require.NoError(t, err)
			assert.Zero(t, n)
			return nil
		}))
	})
}

// TestACommandIsRecordedOnce: RecordCommand is true once per comment of a
// repository, and forgotten with the deliveries of its time.
func TestACommandIsRecordedOnce(t *testing.T) {
	eachDialect(t, func(t *testing.T, cfg state.Config) {
		ctx := t.Context()
		s := open(t, cfg)
		defer s.Close()
		record := func(repo string, id int64) (first bool) {
			require.NoError(t, s.Update(ctx, func(tx *state.Tx) (err error) {
				first, err = tx.RecordCommand(ctx, repo, id)
				return err
			}))
			return first
		}
		assert.True(t, record("o/r", 7))
		assert.False(t, record("o/r", 7), "the same comment again")
		assert.True(t, record("o/other", 7), "another repository's comment")
		require.NoError(t, s.Update(ctx, func(tx *state.Tx) error {
			_, err := tx.ForgetDeliveries(ctx, time.Now().Add(time.Hour))
			return err
		}))
		assert.True(t, record("o/r", 7), "forgotten")
	})
}

// TestSQLiteStateDirsAreTheirOwn: a state directory whose name holds URI
// syntax ("#", "?", "%") is still that directory, with WAL and fsync on.
func TestSQLiteStateDirsAreTheirOwn(t *testing.T) {
	base := t.TempDir()
	for _, name := range []string{"a#1", "a#2", "b?x=1", "c%20d"} {
		cfg := state.Config{Dir: filepath.Join(base, name), ReplicaID: "test"}
		s := open(t, cfg)
		ok, err := s.Accept(t.Context(), state.Delivery{Installation: 1, ID: "same", Event: "x", Payload: []byte(`{}`)})
		require.NoError(t, err)
		assert.True(t, ok, "a fresh state in %s", name)
		_, err = os.Stat(filepath.Join(cfg.Dir, state.SQLiteFile+"-wal"))
		assert.NoError(t, err, "in WAL mode, so the pragmas were read")
		require.NoError(t, s.Close())
		_, err = os.Stat(filepath.Join(cfg.Dir, state.SQLiteFile))
		assert.NoError(t, err, "the database is inside %s", name)
	}
	entries, err := os.ReadDir(base)
	require.NoError(t, err)
	assert.Len(t, entries, 4, "no database file outside the state directories")
}

func TestSQLiteStateDirServesOneProcess(t *testing.T) {
	cfg := statetest.Config(t, "sqlite")
	s := open(t, cfg)
	defer s.Close()
	_, err := state.Open(t.Context(), cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "in use by another pairbench serve")
}

// The helper process opens the store named by its environment, starts a
// job that blocks, and waits to be killed.
const helperEnv = "PAIRBENCH_STATE_HELPER"

type blocker struct {
	river.WorkerDefaults[state.DeliveryJob]
	started string
}

func (b *blocker) Work(ctx context.Context, j *river.Job[state.DeliveryJob]) error {
	_ = os.WriteFile(b.started, []byte(j.Args.ID), 0o600)
	<-ctx.Done()
	return ctx.Err()
}

func helperProcess() {
	if os.Getenv("HELPER_MODE") == "accept" {
		acceptUntilKilled()
		return
	}
	cfg := state.Config{Dir: os.Getenv("HELPER_DIR"), PostgresURL: os.Getenv("HELPER_URL"), ReplicaID: os.Getenv("HELPER_REPLICA")}
	workers := river.NewWorkers()
	river.AddWorker(workers, &blocker{started: os.Getenv("HELPER_STARTED")})
	cfg.Workers = workers
	ctx := context.Background()
	s, err := state.Open(ctx, cfg)
	if err != nil {
		panic(err)
	}
	if _, err := s.Accept(ctx, state.Delivery{Installation: 1, ID: "killed", Event: "x", Payload: []byte(`{}`)}); err != nil {
		panic(err)
	}
	if err := s.Start(ctx); err != nil {
		panic(err)
	}
	select {}
}

// TestJobsOfAKilledReplicaAreTakenBackAtItsRestart kills a process with
// SIGKILL while its job runs; the same replica, restarted, runs the job
// again at once, while another replica leaves it to River's rescuer.
func TestJobsOfAKilledReplicaAreTakenBackAtItsRestart(t *testing.T) {
	eachDialect(t, func(t *testing.T, cfg state.Config) {
		started := filepath.Join(t.TempDir(), "started")
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=1", "HELPER_DIR="+cfg.Dir, "HELPER_URL="+cfg.PostgresURL,
			"HELPER_REPLICA=replica-a", "HELPER_STARTED="+started)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		require.Eventually(t, func() bool { _, err := os.Stat(started); return err == nil }, 30*time.Second, 20*time.Millisecond)
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()

		w := &deliveries{}
		workers := river.NewWorkers()
		river.AddWorker(workers, w)
		cfg.Workers = workers
		if cfg.PostgresURL != "" {
			// Another replica does not take it: replica-a may still be
			// running it, for all it knows.
			cfg.ReplicaID = "replica-b"
			other := open(t, cfg)
			require.NoError(t, other.Start(t.Context()))
			time.Sleep(time.Second)
			assert.Zero(t, w.count("killed"))
			stop(t, other)
			require.NoError(t, other.Close())
		}
		cfg.ReplicaID = "replica-a"
		s := open(t, cfg)
		defer s.Close()
		require.NoError(t, s.Start(t.Context()))
		defer stop(t, s)
		require.Eventually(t, func() bool { return w.count("killed") == 1 }, 10*time.Second, 20*time.Millisecond,
			"the restarted replica ran its orphaned job again")
	})
}

// acceptUntilKilled accepts deliveries from 16 goroutines at once and
// prints each one's id once Accept has returned, until it is killed.
func acceptUntilKilled() {
	cfg := state.Config{Dir: os.Getenv("HELPER_DIR"), PostgresURL: os.Getenv("HELPER_URL"), ReplicaID: "acceptor"}
	ctx := context.Background()
	s, err := state.Open(ctx, cfg)
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex
	payload := []byte(`{"pull_request":{"body":"` + strings.Repeat("x", 8<<10) + `"}}`)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for n := 0; ; n++ {
				id := fmt.Sprintf("g%d-%d", g, n)
				ok, err := s.Accept(ctx, state.Delivery{Installation: 1, ID: id, Event: "pull_request", Payload: payload})
				if err != nil || !ok {
					panic(fmt.Sprint(id, ok, err))
				}
				mu.Lock()
				fmt.Println(id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// TestAcknowledgedDeliveriesSurviveSIGKILL kills a process with SIGKILL
// while it accepts deliveries from 16 goroutines at once (the commits that
// share a transaction, the write gate, the checkpoints beside them): every
// delivery whose Accept had returned is stored after the restart, with its
// job.
func TestAcknowledgedDeliveriesSurviveSIGKILL(t *testing.T) {
	eachDialect(t, func(t *testing.T, cfg state.Config) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=1", "HELPER_MODE=accept", "HELPER_DIR="+cfg.Dir, "HELPER_URL="+cfg.PostgresURL)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		var acked []string
		lines := bufio.NewScanner(out)
		for len(acked) < 1500 && lines.Scan() {
			acked = append(acked, lines.Text())
		}
		require.NoError(t, cmd.Process.Kill())
		for lines.Scan() { // printed before the kill landed
			acked = append(acked, lines.Text())
		}
		_ = cmd.Wait()
		require.GreaterOrEqual(t, len(acked), 1500, "the helper accepted deliveries")

		s := open(t, cfg)
		defer s.Close()
		require.NoError(t, s.View(t.Context(), func(tx *state.Tx) error {
			for _, id := range acked {
				d, err := tx.Delivery(t.Context(), 1, id)
				if !assert.NoError(t, err, "acknowledged delivery %s", id) {
					continue
				}
				assert.Equal(t, len(`{"pull_request":{"body":""}}`)+8192, len(d.Payload), "delivery %s's payload", id)
			}
			return nil
		}))
		jobs, err := s.JobsNotFinished(t.Context())
		require.NoError(t, err)
		assert.GreaterOrEqual(t, jobs["delivery"], len(acked), "every acknowledged delivery's job is stored")
	})
}

// TestTheSQLiteWALIsCheckpointedBesideTheCommits: with SQLite's own
// checkpoints off (they ran inside whichever commit crossed the
// threshold), the service's checkpoints keep the WAL from growing with
// everything written: 40 MB of deliveries leave a WAL a fraction of that
// (it starts again from its beginning; without the restart it grew to
// 75 MB).
func TestTheSQLiteWALIsCheckpointedBesideTheCommits(t *testing.T) {
	cfg := statetest.Config(t, "sqlite")
	s := open(t, cfg)
	defer s.Close()
	payload := []byte(`{"body":"` + strings.Repeat("x", 16<<10) + `"}`)
	var wg sync.WaitGroup
	// The WAL restarts between checkpoints, so its size is bounded by what is
	// written between two of them (more on a loaded machine, whose checkpoint
	// loop runs late: 22 MB was seen of a 41 MB stream), never by the
	// stream's length; a stream of 82 MB tells the two apart with room.
	const perWriter = 640
	for g := range 8 {
		wg.Go(func() {
			for n := range perWriter {
				_, err := s.Accept(t.Context(), state.Delivery{Installation: 1, ID: fmt.Sprintf("%d-%d", g, n), Event: "x", Payload: payload})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	time.Sleep(300 * time.Millisecond) // a checkpoint or two after the last commit
	wal, err := os.Stat(filepath.Join(cfg.Dir, state.SQLiteFile+"-wal"))
	require.NoError(t, err)
	written := int64(8 * perWriter * len(payload))
	assert.Less(t, wal.Size(), written/2, "the WAL (%d bytes) is reused, not grown with the %d bytes written", wal.Size(), written)
	db, err := os.Stat(filepath.Join(cfg.Dir, state.SQLiteFile))
	require.NoError(t, err)
	assert.Greater(t, db.Size(), written/2, "the deliveries reached the database file")
}
