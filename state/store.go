// Package state is the GitHub service's durable memory: every webhook
// delivery it accepted, every pull request and bench it knows of, and the
// work still to do on them, as River jobs (github.com/riverqueue/river) in
// the same database. Two databases hold it, with the same code and the same
// schema: SQLite (one file under the service's state directory; the embedded
// default) and PostgreSQL (several replicas behind one load balancer).
//
// Everything the service changes is changed in a transaction (Store.Update)
// that also inserts the jobs following from it, so a crash never leaves a
// decision without its work or work without its decision. Package state
// knows nothing of GitHub: it stores what package bot tells it to and runs
// the workers bot registers.
package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Queues the service's jobs run on.
const (
	// QueueGitHub holds the short jobs: handling a delivery, each GitHub
	// write, reading a report.
	QueueGitHub = river.QueueDefault
	// QueueBench holds the local backend's benches, one at a time per host.
	QueueBench = "bench"
)

// Config says where the state lives and how its jobs run.
type Config struct {
	// Dir is the state directory of the embedded SQLite database
	// (state.db inside it); the directory is created if missing, and one
	// process at a time may use it. Exactly one of Dir and PostgresURL is
	// set.
	Dir string
	// PostgresURL is a postgres:// connection URL for a database shared by
	// several replicas.
	PostgresURL string
	// ReplicaID names this process among the replicas; it must be stable
	// across restarts and unique among replicas running at once (the host
	// name, by default). A restarted replica takes back at once the jobs its
	// previous run left running.
	ReplicaID string
	// Workers are the job workers; required to run jobs (Start), not to
	// insert them.
	Workers *river.Workers
	// GitHubWorkers and BenchWorkers are the jobs run at once on QueueGitHub
	// (default 8) and QueueBench (default 1).
	GitHubWorkers, BenchWorkers int
	// PeriodicJobs are run on one replica at a time.
	PeriodicJobs []*river.PeriodicJob
	// RetryPolicy decides when a failed job is tried again; default River's.
	RetryPolicy river.ClientRetryPolicy
	// ErrorHandler hears of every job error and panic; optional.
	ErrorHandler river.ErrorHandler
	// MaxAttempts bounds the tries of a job; default 20.
	MaxAttempts int
	// JobTimeout bounds one try of a job whose worker sets no Timeout;
	// default 2 minutes.
	JobTimeout time.Duration
	// RescueAfter is how long a job may run before another replica takes it
	// back as orphaned (its own timeout permitting); default 5 minutes.
	RescueAfter time.Duration
	// Logger receives River's logs at warning level and above; default
	// discard.
	Logger *slog.Logger
}

// Store is an open state database with its job queue.
type Store struct {
	db      database
	river   riverClient
	log     *slog.Logger
	replica string
	closeFn func() error
	accepts chan acceptReq
	stop    chan struct{} // ends acceptLoop
}

// riverClient is what the Store uses of a River client, whichever its
// driver's transaction type.
type riverClient interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	StopAndCancel(ctx context.Context) error
	JobCancel(ctx context.Context, id int64) (*rivertype.JobRow, error)
	JobGet(ctx context.Context, id int64) (*rivertype.JobRow, error)
	JobList(ctx context.Context, params *river.JobListParams) (*river.JobListResult, error)
}

// Open opens (creating and migrating if needed) the state database that cfg
// names and its River client, without starting the workers.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if (cfg.Dir == "") == (cfg.PostgresURL == "") {
		return nil, errors.New("state: give exactly one of a state directory and a Postgres URL")
	}
	if cfg.ReplicaID == "" {
		return nil, errors.New("state: no replica id")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	var (
		s   *Store
		err error
	)
	if cfg.Dir != "" {
		s, err = openSQLite(ctx, cfg)
	} else {
		s, err = openPostgres(ctx, cfg)
	}
	if err != nil {
		return nil, err
	}
	s.log, s.replica = cfg.Logger, cfg.ReplicaID
	s.accepts, s.stop = make(chan acceptReq, 4096), make(chan struct{})
	go s.acceptLoop(s.stop)
	return s, nil
}

// riverConfig is the River client configuration both drivers share.
func riverConfig(cfg Config) *river.Config {
	rc := &river.Config{
		ID:                   cfg.ReplicaID,
		Logger:               riverLogger(cfg.Logger),
		MaxAttempts:          orDefault(cfg.MaxAttempts, 20),
		JobTimeout:           orDefault(cfg.JobTimeout, 2*time.Minute),
		RescueStuckJobsAfter: orDefault(cfg.RescueAfter, 5*time.Minute),
		RetryPolicy:          cfg.RetryPolicy,
		ErrorHandler:         cfg.ErrorHandler,
		PeriodicJobs:         cfg.PeriodicJobs,
		FetchCooldown:        20 * time.Millisecond,
		FetchPollInterval:    500 * time.Millisecond,
		// Finished jobs are kept a day, for the operator's questions.
		CompletedJobRetentionPeriod: 24 * time.Hour,
		CancelledJobRetentionPeriod: 7 * 24 * time.Hour,
		DiscardedJobRetentionPeriod: 30 * 24 * time.Hour,
		// A stop waits this long for jobs to end on their own, then
		// cancels their contexts.
		SoftStopTimeout: 0,
	}
	if cfg.Workers != nil {
		rc.Workers = cfg.Workers
		rc.Queues = map[string]river.QueueConfig{
			QueueGitHub: {MaxWorkers: orDefault(cfg.GitHubWorkers, 8)},
			QueueBench:  {MaxWorkers: orDefault(cfg.BenchWorkers, 1)},
		}
	}
	return rc
}

// riverLogger passes on River's warnings and errors only: its info lines
// are about its own machinery.
func riverLogger(l *slog.Logger) *slog.Logger {
	return slog.New(levelFilter{l.Handler(), slog.LevelWarn}).With("component", "river")
}

type levelFilter struct {
	slog.Handler
	min slog.Level
}

func (f levelFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.Handler.Enabled(ctx, l)
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Start takes back the jobs this replica's previous run left running (it was
// killed), then starts the workers. They run until Stop.
func (s *Store) Start(ctx context.Context) error {
	if n, err := s.db.rescueOwn(ctx, s.replica); err != nil {
		return fmt.Errorf("state: take back orphaned jobs: %w", err)
	} else if n > 0 {
		s.log.Info("took back jobs a previous run left running", "jobs", n)
	}
	if err := s.river.Start(ctx); err != nil {
		return fmt.Errorf("state: start jobs: %w", err)
	}
	return nil
}

// Stop stops fetching jobs and waits for the running ones until soft ends;
// then it cancels their contexts and waits for them to return until hard
// ends, and returns whether or not they did (the process may exit: a job
// cut short runs again at the next start). A worker interrupted that way
// should return river.JobSnooze(0) to be run again without spending an
// attempt.
func (s *Store) Stop(soft, hard context.Context) error {
	err := s.river.Stop(soft)
	if err == nil {
		return nil
	}
	return errors.Join(err, s.river.StopAndCancel(hard))
}

// Close closes the database. Stop first if the workers were started.
func (s *Store) Close() error {
	close(s.stop)
	return s.closeFn()
}

// Dialect names the database: "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.db.dialect() }

// Update runs fn in a transaction and commits it if fn returns nil. Jobs fn
// inserts are committed with everything else, or not at all.
func (s *Store) Update(ctx context.Context, fn func(tx *Tx) error) error {
	return s.db.inTx(ctx, func(tx *Tx) error { return fn(tx) })
}

// View runs fn in a transaction that is rolled back: for reading.
func (s *Store) View(ctx context.Context, fn func(tx *Tx) error) error {
	errRollback := errors.New("rollback")
	err := s.db.inTx(ctx, func(tx *Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return errRollback
	})
	if errors.Is(err, errRollback) {
		return nil
	}
	return err
}

// CancelJob cancels a job: one not yet running never runs, a running one
// has its context cancelled. A job that already ended is left alone.
func (s *Store) CancelJob(ctx context.Context, id int64) error {
	_, err := s.river.JobCancel(ctx, id)
	if errors.Is(err, river.ErrNotFound) {
		return nil
	}
	return err
}

// JobState returns the state of job id; ErrNotFound (wrapped) once River
// deleted it, long after it ended.
func (s *Store) JobState(ctx context.Context, id int64) (rivertype.JobState, error) {
	j, err := s.river.JobGet(ctx, id)
	if errors.Is(err, river.ErrNotFound) {
		return "", fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return "", err
	}
	return j.State, nil
}

// JobsNotFinished counts the jobs not yet completed, cancelled or
// discarded, by kind: for tests and the operator's status.
func (s *Store) JobsNotFinished(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	params := river.NewJobListParams().States(
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
		rivertype.JobStateRunning, rivertype.JobStateScheduled).First(10_000)
	res, err := s.river.JobList(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("state: list jobs: %w", err)
	}
	for _, j := range res.Jobs {
		out[j.Kind]++
	}
	return out, nil
}

// Discarded returns the jobs River gave up on, newest first, at most n.
func (s *Store) Discarded(ctx context.Context, n int) ([]*rivertype.JobRow, error) {
	res, err := s.river.JobList(ctx, river.NewJobListParams().States(rivertype.JobStateDiscarded).First(n).OrderBy(river.JobListOrderByID, river.SortOrderDesc))
	if err != nil {
		return nil, fmt.Errorf("state: list discarded jobs: %w", err)
	}
	return res.Jobs, nil
}
