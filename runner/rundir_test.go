package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

func TestLockRunIsExclusive(t *testing.T) {
	dir := t.TempDir()
	l, err := LockRun(dir)
	require.NoError(t, err)
	_, err = LockRun(dir)
	require.ErrorIs(t, err, ErrLocked, "a second holder in this process is refused")

	// Another process is refused too (flock is per open file description).
	cmd := exec.Command("flock", "-n", filepath.Join(dir, ".lock"), "true")
	if _, lerr := exec.LookPath("flock"); lerr == nil {
		assert.Error(t, cmd.Run(), "flock from another process must fail while we hold the lock")
	}
	require.NoError(t, l.Unlock())
	l2, err := LockRun(dir)
	require.NoError(t, err, "free again after Unlock")
	require.NoError(t, l2.Unlock())
}

func testRow(i int) pairbench.Row {
	return pairbench.Row{Intent: "x", Stage: pairbench.StagePair, Pair: i, Order: pairbench.AB,
		Arm: pairbench.Control, Attempt: 1, Outcome: pairbench.Correct}
}

func TestRowLogRepairsPartialLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	l, err := OpenRowLog(path)
	require.NoError(t, err)
	require.NoError(t, l.Append(testRow(0)))
	require.NoError(t, l.Close())

	// A writer killed mid-line leaves a partial row.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"v":1,"intent":"x","pa`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	l, err = OpenRowLog(path)
	require.NoError(t, err)
	require.NoError(t, l.Append(testRow(1)))
	require.NoError(t, l.Close())

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	rows, partial, err := pairbench.ReadRows(strings.NewReader(string(b)))
	require.NoError(t, err)
	assert.Zero(t, partial)
	require.Len(t, rows, 2)
	assert.Equal(t, 1, rows[1].Pair)
}

func TestRowLogConcurrentAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	l, err := OpenRowLog(path)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() { assert.NoError(t, l.Append(testRow(i))) })
	}
	wg.Wait()
	require.NoError(t, l.Close())
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rows, _, err := pairbench.ReadRows(f)
	require.NoError(t, err)
	assert.Len(t, rows, 40, "no line interleaved or lost")
}

func TestRowLogOnlyPartial(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"v":1`), 0o644))
	l, err := OpenRowLog(path)
	require.NoError(t, err)
	require.NoError(t, l.Append(testRow(3)))
	require.NoError(t, l.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(b), "\n"))
	assert.True(t, strings.HasPrefix(string(b), `{"v":1,"run_id"`))
}
