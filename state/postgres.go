package state

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
)

type postgresDB struct {
	pool *pgxpool.Pool
	rc   *river.Client[pgx.Tx]
}

func openPostgres(ctx context.Context, cfg Config) (*Store, error) {
	pcfg, err := pgxpool.ParseConfig(cfg.PostgresURL)
	if err != nil {
		return nil, fmt.Errorf("state: postgres URL: %w", err)
	}
	if pcfg.MaxConns < 32 {
		pcfg.MaxConns = 32 // River's producers and listener, the accept loop, the jobs
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("state: postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("state: postgres: %w", err)
	}
	closeAll := func() error { pool.Close(); return nil }
	driver := riverpgxv5.New(pool)
	if err := migrateRiver(ctx, driver); err != nil {
		pool.Close()
		return nil, err
	}
	rc, err := river.NewClient(driver, riverConfig(cfg))
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("state: river: %w", err)
	}
	d := &postgresDB{pool: pool, rc: rc}
	if err := migrate(ctx, d, "BYTEA"); err != nil {
		pool.Close()
		return nil, err
	}
	return &Store{db: d, river: rc, closeFn: closeAll}, nil
}

func (d *postgresDB) dialect() string { return "postgres" }

func (d *postgresDB) acceptTx(ctx context.Context, fn func(tx *Tx) error) error {
	return d.inTx(ctx, fn)
}

func (d *postgresDB) rescueOwn(ctx context.Context, replica string) (int, error) {
	return rescueOwn(ctx, riverpgxv5.New(d.pool), "", replica)
}

func (d *postgresDB) inTx(ctx context.Context, fn func(tx *Tx) error) error {
	ptx, err := d.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("state: begin: %w", err)
	}
	tx := &Tx{
		q:   pgxQuerier{ptx},
		now: time.Now(),
		insert: func(ctx context.Context, jobs []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
			return d.rc.InsertManyTx(ctx, ptx, jobs)
		},
		insertFast: func(ctx context.Context, jobs []river.InsertManyParams) error {
			_, err := d.rc.InsertManyFastTx(ctx, ptx, jobs)
			return err
		},
	}
	if err := fn(tx); err != nil {
		_ = ptx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if err := ptx.Commit(ctx); err != nil {
		return fmt.Errorf("state: commit: %w", err)
	}
	return nil
}

// pgxQuerier is a querier over pgx.
type pgxQuerier struct{ tx pgx.Tx }

func (p pgxQuerier) exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := p.tx.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (p pgxQuerier) queryRow(ctx context.Context, q string, args []any, dest ...any) error {
	err := p.tx.QueryRow(ctx, q, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNoRows
	}
	return err
}

func (p pgxQuerier) query(ctx context.Context, q string, args []any, each func(scan func(dest ...any) error) error) error {
	rows, err := p.tx.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return eachRow(rows, each)
}
