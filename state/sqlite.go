package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

// SQLiteFile is the database file in a state directory.
const SQLiteFile = "state.db"

// lockFile in the state directory is held, locked, by the one process
// using it.
const lockFile = "state.lock"

type sqliteDB struct {
	db *sql.DB
	rc *river.Client[*sql.Tx]
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
	// Every commit is fsynced (synchronous FULL in WAL mode): an
	// acknowledged delivery survives a power cut, not just a crash.
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(FULL)", "busy_timeout(10000)", "foreign_keys(1)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	// The path is escaped: a "#" or "?" in it would end it in a URI.
	file := (&url.URL{Path: filepath.Join(cfg.Dir, SQLiteFile)}).EscapedPath()
	db, err := sql.Open("sqlite", "file:"+file+"?"+q.Encode())
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("state: %w", err)
	}
	// SQLite has one writer; one connection serves River and the service in
	// turn instead of having them fail with SQLITE_BUSY.
	db.SetMaxOpenConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	closeAll := func() error { return errors.Join(db.Close(), lock.Close()) }

	driver := riversqlite.New(db)
	if err := migrateRiver(ctx, driver); err != nil {
		closeAll()
		return nil, err
	}
	rc, err := river.NewClient(driver, riverConfig(cfg))
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("state: river: %w", err)
	}
	d := &sqliteDB{db: db, rc: rc}
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
	stx, err := d.db.BeginTx(ctx, nil)
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
