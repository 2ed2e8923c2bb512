package artifacts_test

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/internal/fulldisk"
)

// TestLocalPutOnAFullDisk: a Put into a local store whose filesystem is
// full fails saying so and naming the key, leaves no temporary file, and
// leaves the object it would have replaced as it was; once there is space
// the same Put succeeds.
func TestLocalPutOnAFullDisk(t *testing.T) {
	disk := fulldisk.Mount(t, 1<<20)
	store, err := artifacts.NewLocal(disk)
	require.NoError(t, err)
	old := []byte("the object before\n")
	require.NoError(t, store.Put(t.Context(), "r/rows.jsonl", bytes.NewReader(old)))
	filler := fulldisk.Fill(t, disk)

	big := bytes.Repeat([]byte("x"), 256<<10)
	err = store.Put(t.Context(), "r/rows.jsonl", bytes.NewReader(big))
	require.Error(t, err)
	t.Logf("the error: %v", err)
	assert.ErrorContains(t, err, "no space left on device")
	assert.ErrorContains(t, err, "r/rows.jsonl")
	assert.Empty(t, fulldisk.Temps(t, disk), "a Put that did not fit leaves no temporary file")
	assert.Equal(t, old, get(t, store, "r/rows.jsonl"), "the object before is as it was")

	require.NoError(t, os.Remove(filler))
	require.NoError(t, store.Put(t.Context(), "r/rows.jsonl", bytes.NewReader(big)))
	assert.Equal(t, big, get(t, store, "r/rows.jsonl"))
	assert.Empty(t, fulldisk.Temps(t, disk))
}

func get(t *testing.T, s artifacts.Store, key string) []byte {
	t.Helper()
	rc, err := s.Get(t.Context(), key)
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return b
}
