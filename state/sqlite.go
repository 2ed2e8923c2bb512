package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"golang.org/x/sys/unix"
	"modernc.org/sqlite" // pure Go
)

// SQLiteFile is the database file in a state directory.
const SQLiteFile = "state.db"

// lockFile in the state directory is held, locked, by the one process
// using it.
const lockFile = "state.lock"

type sqliteDB struct {
	db    *sql.DB // River's and the service's
	inbox *sql.DB // the acknowledgement path's
	rc    *river.Client[*sql.Tx]
}

func openSQLite(ctx context.Context, cfg Config) (*Store, error) {
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cfg.Dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("state: %s is in use by another pairbench serve; SQLite state serves one process (use --postgres for replicas)", cfg.Dir)
		}
		return nil, fmt.Errorf("state: lock %s: %w", cfg.Dir, err)
	}
	// Every commit is synced to the disk (synchronous FULL in WAL mode): an
	// acknowledged delivery survives a power cut, not just a crash. The
	// sync is fdatasync(2), as in SQLite's own Linux builds (this library
	// defaults to fsync): as durable, and it leaves the file's timestamps
	// out of the sync. Where fdatasync is unavailable SQLite keeps fsync.
	// Checkpoints run beside the commits (checkpointLoop), not in them.
	_, _ = sqlite.Fdatasync(true)
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(FULL)", "busy_timeout(10000)", "foreign_keys(1)", "wal_autocheckpoint(0)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	// The path is escaped: a "#" or "?" in it would end it in a URI.
	file := (&url.URL{Path: filepath.Join(cfg.Dir, SQLiteFile)}).EscapedPath()
	connector, err := sqlite.NewConnector("file:" + file + "?" + q.Encode())
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("state: %w", err)
	}
	// SQLite has one writer. Three connections: one that River and the
	// service's updates share, one for the acknowledgement path alone, and
	// one for checkpoints; the first two take the write lock through a gate
	// in which the acknowledgement path goes first, so that a delivery
	// waits for at most the one transaction under way, never for River's
	// queue of them.
	gate := &writeGate{}
	open := func(urgent bool) *sql.DB {
		db := sql.OpenDB(gatedConnector{Connector: connector, gate: gate, urgent: urgent})
		db.SetMaxOpenConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		return db
	}
	db, inbox := open(false), open(true)
	ckpt := sql.OpenDB(connector)
	ckpt.SetMaxOpenConns(1)
	stopCkpt, ckptDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ckptDone)
		checkpointLoop(ckpt, gate, cfg.Logger, stopCkpt)
	}()
	closeAll := func() error {
		close(stopCkpt)
		<-ckptDone
		return errors.Join(inbox.Close(), db.Close(), ckpt.Close(), lock.Close())
	}

	driver := riverSQLite{riversqlite.New(db)}
	if err := migrateRiver(ctx, driver); err != nil {
		closeAll()
		return nil, err
	}
	rc, err := river.NewClient(driver, riverConfig(cfg))
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("state: river: %w", err)
	}
	d := &sqliteDB{db: db, inbox: inbox, rc: rc}
	if err := migrate(ctx, d, "BLOB"); err != nil {
		closeAll()
		return nil, err
	}
	return &Store{db: d, river: rc, closeFn: closeAll}, nil
}

// migrateRiver brings River's own tables to the version this River needs.
func migrateRiver[TTx any](ctx context.Context, driver riverdriver.Driver[TTx]) error {
	m, err := rivermigrate.New(driver, nil)
	if err != nil {
		return fmt.Errorf("state: river migrations: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("state: river migrations: %w", err)
	}
	return nil
}

func (d *sqliteDB) dialect() string { return "sqlite" }

func (d *sqliteDB) rescueOwn(ctx context.Context, replica string) (int, error) {
	return rescueOwn(ctx, riversqlite.New(d.db), "", replica)
}

func (d *sqliteDB) inTx(ctx context.Context, fn func(tx *Tx) error) error {
	return d.runTx(ctx, d.db, fn)
}

func (d *sqliteDB) acceptTx(ctx context.Context, fn func(tx *Tx) error) error {
	return d.runTx(ctx, d.inbox, fn)
}

func (d *sqliteDB) runTx(ctx context.Context, db *sql.DB, fn func(tx *Tx) error) error {
	stx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("state: begin: %w", err)
	}
	tx := &Tx{
		q:   sqlQuerier{stx},
		now: time.Now(),
		insert: func(ctx context.Context, jobs []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
			return d.rc.InsertManyTx(ctx, stx, jobs)
		},
		insertFast: func(ctx context.Context, jobs []river.InsertManyParams) error {
			_, err := d.rc.InsertManyFastTx(ctx, stx, jobs)
			return err
		},
	}
	if err := fn(tx); err != nil {
		_ = stx.Rollback()
		return err
	}
	if err := stx.Commit(); err != nil {
		return fmt.Errorf("state: commit: %w", err)
	}
	return nil
}

// sqlQuerier is a querier over database/sql.
type sqlQuerier struct{ tx *sql.Tx }

func (s sqlQuerier) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := s.tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s sqlQuerier) queryRow(ctx context.Context, q string, args []any, dest ...any) error {
	err := s.tx.QueryRowContext(ctx, q, args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return errNoRows
	}
	return err
}

func (s sqlQuerier) query(ctx context.Context, q string, args []any, each func(scan func(dest ...any) error) error) error {
	rows, err := s.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return eachRow(rows, each)
}

// checkpointLoop copies the WAL's committed pages into the database file
// every checkpointEvery, on its own connection: a passive checkpoint takes
// no write lock, so commits never wait for one (which they would with
// SQLite's automatic checkpoint, run by the committing connection). But the
// WAL starts again from its beginning only when a transaction begins with
// every frame copied, which under a steady stream of commits a passive
// checkpoint beside them never achieves: once the WAL holds restartFrames,
// the loop takes the write gate for one more passive pass (the frames
// committed since the last one: a millisecond or two), so that the next
// transaction finds it all copied and restarts the WAL. A failure is logged
// once until a checkpoint succeeds again.
func checkpointLoop(db *sql.DB, gate *writeGate, log *slog.Logger, stop <-chan struct{}) {
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	failing := false
	checkpoint := func() (frames int, err error) {
		var busy, copied int
		err = db.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
		return frames, err
	}
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		frames, err := checkpoint()
		if err == nil && frames >= restartFrames {
			ctx, cancel := context.WithTimeout(context.Background(), checkpointEvery)
			if err = gate.acquire(ctx, false); err == nil {
				_, err = checkpoint()
				gate.release()
			}
			cancel()
		}
		switch {
		case err != nil && !failing:
			log.Warn("state: checkpoint of the SQLite WAL failed; the WAL grows until one succeeds", "err", err)
		case err == nil && failing:
			log.Info("state: checkpoints of the SQLite WAL succeed again")
		}
		failing = err != nil
	}
}

const (
	checkpointEvery = 100 * time.Millisecond
	// restartFrames is the WAL's length, in pages, from which it is made to
	// start again: SQLite's own threshold for its automatic checkpoint.
	restartFrames = 1000
)

// riverSQLite is River's SQLite driver with its job completions committed
// a few at a time: River completes the jobs that ended in the last 50 ms
// in one transaction, one UPDATE each on SQLite, which at hundreds of jobs
// a second held the write lock for tens of milliseconds while deliveries
// waited to be acknowledged.
type riverSQLite struct{ *riversqlite.Driver }

func (d riverSQLite) GetExecutor() riverdriver.Executor {
	return completionsInSteps{d.Driver.GetExecutor()}
}

// completionStep is how many jobs' completions share a transaction.
const completionStep = 8

type completionsInSteps struct{ riverdriver.Executor }

// JobSetStateIfRunningMany sets the jobs' states completionStep at a time.
// A step that fails leaves the steps before it committed; River retries the
// batch, and a job no longer running is left as it is.
func (e completionsInSteps) JobSetStateIfRunningMany(ctx context.Context, p *riverdriver.JobSetStateIfRunningManyParams) ([]*rivertype.JobRow, error) {
	out := make([]*rivertype.JobRow, 0, len(p.ID))
	for i := 0; i < len(p.ID); i += completionStep {
		j := min(i+completionStep, len(p.ID))
		step := *p
		step.ID, step.Attempt, step.ErrData, step.FinalizedAt = p.ID[i:j], p.Attempt[i:j], p.ErrData[i:j], p.FinalizedAt[i:j]
		step.MetadataDoMerge, step.MetadataUpdates, step.ScheduledAt, step.State = p.MetadataDoMerge[i:j], p.MetadataUpdates[i:j], p.ScheduledAt[i:j], p.State[i:j]
		rows, err := e.Executor.JobSetStateIfRunningMany(ctx, &step)
		if err != nil {
			return out, err
		}
		out = append(out, rows...)
	}
	return out, nil
}
