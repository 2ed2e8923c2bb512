package state

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSchemaOneIsMigrated opens a database a pairbench of schema version 1
// wrote: its bench keeps every field, takes the default agent, and takes an
// agent once saved with one; it has no base (benches against no tools)
// until one is saved.
func TestSchemaOneIsMigrated(t *testing.T) {
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, SQLiteFile))
	require.NoError(t, err)
	for stmt := range strings.SplitSeq(migrations[0], ";") {
		_, err := db.Exec(stmt)
		require.NoError(t, err)
	}
	for _, stmt := range []string{
		`CREATE TABLE pb_schema (version BIGINT NOT NULL)`,
		`INSERT INTO pb_schema (version) VALUES (1)`,
		`INSERT INTO pb_benches (run, repo, pr, sha, backend, model, state, created_at) VALUES ('r1', 'o/r', 2, 'aaa', 'local', 'm', 'queued', 5)`,
	} {
		_, err := db.Exec(stmt)
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())

	s, err := Open(t.Context(), Config{Dir: dir, ReplicaID: "test"})
	require.NoError(t, err)
	defer s.Close()
	ctx := t.Context()
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		b, found, err := tx.LockBench(ctx, "r1")
		require.NoError(t, err)
		require.True(t, found)
		assert.Equal(t, "m", b.Model)
		assert.Equal(t, 2, b.PR)
		assert.Empty(t, b.Agent, "a bench from before agents were asked for takes the default")
		assert.Empty(t, b.Base, "a bench from before bases were recorded benches against no tools")
		assert.Empty(t, b.FailOn, "a bench from before fail_on lets its verdict decide")
		assert.Zero(t, b.Looks, "a bench from before looks were recorded shows none")
		assert.Empty(t, b.StopKind)
		b.Agent, b.Base, b.FailOn = "codex", "bbb", "worse"
		return tx.SaveBench(ctx, b)
	}))
	require.NoError(t, s.View(ctx, func(tx *Tx) error {
		b, _, err := tx.Bench(ctx, "r1")
		assert.Equal(t, "codex", b.Agent)
		assert.Equal(t, "bbb", b.Base)
		assert.Equal(t, "worse", b.FailOn)
		return err
	}))
	var version int64
	require.NoError(t, s.View(ctx, func(tx *Tx) error {
		return tx.q.queryRow(ctx, `SELECT version FROM pb_schema`, nil, &version)
	}))
	assert.Equal(t, int64(len(migrations)), version)
}
