package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
)

// database is one of the two SQL databases, behind the few operations the
// Store needs of it.
type database interface {
	dialect() string
	// inTx runs fn in a transaction, committing it when fn returns nil.
	inTx(ctx context.Context, fn func(tx *Tx) error) error
	// acceptTx is inTx for the acknowledgement path, which commits the
	// deliveries GitHub is waiting on: first in line for the database.
	acceptTx(ctx context.Context, fn func(tx *Tx) error) error
	// rescueOwn makes the jobs that replica left running available again,
	// and returns how many there were.
	rescueOwn(ctx context.Context, replica string) (int, error)
}

// errNoRows is what queryRow returns when the query found nothing.
var errNoRows = errors.New("no rows")

// querier runs SQL in one transaction. Statements use $1, $2, ...
// placeholders, numbered in order of first use, which both databases read.
type querier interface {
	exec(ctx context.Context, q string, args ...any) (rows int64, err error)
	// queryRow scans the first row into dest, or returns errNoRows.
	queryRow(ctx context.Context, q string, args []any, dest ...any) error
	// query calls each for every row; scan reads the row's columns.
	query(ctx context.Context, q string, args []any, each func(scan func(dest ...any) error) error) error
}

// rows is what eachRow reads of *sql.Rows and pgx.Rows.
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// eachRow calls each for every row.
func eachRow(r rows, each func(scan func(dest ...any) error) error) error {
	for r.Next() {
		if err := each(r.Scan); err != nil {
			return err
		}
	}
	return r.Err()
}

// Tx is one transaction of the Store.
type Tx struct {
	q      querier
	insert func(ctx context.Context, jobs []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
	// insertFast inserts jobs without reading them back.
	insertFast func(ctx context.Context, jobs []river.InsertManyParams) error
	now        time.Time
}

// Now is the transaction's clock reading, the same for everything it
// writes.
func (tx *Tx) Now() time.Time { return tx.now }

// Enqueue inserts a job, committed with the transaction, and returns its
// id. A job unique by its options that is already waiting is not inserted
// again; the waiting one's id is returned.
func (tx *Tx) Enqueue(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (int64, error) {
	res, err := tx.insert(ctx, []river.InsertManyParams{{Args: args, InsertOpts: opts}})
	if err != nil {
		return 0, fmt.Errorf("state: insert %s job: %w", args.Kind(), err)
	}
	return res[0].Job.ID, nil
}

// rescueOwn is database.rescueOwn over a River driver: the jobs whose last
// attempt was replica's become available at once (or discarded if they have
// no attempt left), with an error saying why.
func rescueOwn[TTx any](ctx context.Context, d riverdriver.Driver[TTx], schema, replica string) (int, error) {
	exec := d.GetExecutor()
	now := time.Now().UTC()
	var mine []*rivertype.JobRow
	after := int64(0)
	for {
		stuck, err := exec.JobGetStuck(ctx, &riverdriver.JobGetStuckParams{AfterID: after, Max: 500, Schema: schema, StuckHorizon: now})
		if err != nil {
			return 0, err
		}
		for _, j := range stuck {
			if n := len(j.AttemptedBy); n > 0 && j.AttemptedBy[n-1] == replica {
				mine = append(mine, j)
			}
		}
		if len(stuck) < 500 {
			break
		}
		after = stuck[len(stuck)-1].ID
	}
	if len(mine) == 0 {
		return 0, nil
	}
	p := &riverdriver.JobRescueManyParams{Schema: schema, StuckHorizon: now}
	for _, j := range mine {
		e, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: j.Attempt, Error: "the replica running this job was restarted"})
		if err != nil {
			return 0, err
		}
		state, finalized := string(rivertype.JobStateAvailable), (*time.Time)(nil)
		if j.Attempt >= j.MaxAttempts {
			state, finalized = string(rivertype.JobStateDiscarded), &now
		}
		p.ID = append(p.ID, j.ID)
		p.Error = append(p.Error, e)
		p.FinalizedAt = append(p.FinalizedAt, finalized)
		p.ScheduledAt = append(p.ScheduledAt, now)
		p.State = append(p.State, state)
	}
	if _, err := exec.JobRescueMany(ctx, p); err != nil {
		return 0, err
	}
	return len(mine), nil
}

// migrate brings the service's own tables to the newest schema. The River
// tables are River's migrator's business.
func migrate(ctx context.Context, db database, blobType string) error {
	return db.inTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.exec(ctx, `CREATE TABLE IF NOT EXISTS pb_schema (version BIGINT NOT NULL)`); err != nil {
			return err
		}
		var version int64
		err := tx.q.queryRow(ctx, `SELECT version FROM pb_schema`, nil, &version)
		switch {
		case errors.Is(err, errNoRows):
			if _, err := tx.q.exec(ctx, `INSERT INTO pb_schema (version) VALUES (0)`); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		if int(version) > len(migrations) {
			return fmt.Errorf("state: the database has schema version %d, newer than this pairbench knows (%d): run the newer pairbench", version, len(migrations))
		}
		for i, m := range migrations[version:] {
			for stmt := range strings.SplitSeq(m, ";") {
				stmt = strings.TrimSpace(strings.ReplaceAll(stmt, "BLOB", blobType))
				if stmt == "" {
					continue
				}
				if _, err := tx.q.exec(ctx, stmt); err != nil {
					return fmt.Errorf("state: schema version %d: %w", int(version)+i+1, err)
				}
			}
		}
		_, err = tx.q.exec(ctx, `UPDATE pb_schema SET version = $1`, int64(len(migrations)))
		return err
	})
}
