package artifacts_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts"
)

// TestVersionedCompareAndSwap: a conditional write creates only when
// nothing is stored and replaces only the version the writer read, in a
// directory and in a real S3 server (versitygw); of writers racing on one
// version, exactly one wins.
func TestVersionedCompareAndSwap(t *testing.T) {
	stores := map[string]func(t *testing.T) artifacts.Versioned{
		"local": func(t *testing.T) artifacts.Versioned {
			l, err := artifacts.NewLocal(t.TempDir())
			require.NoError(t, err)
			return l
		},
		"s3": func(t *testing.T) artifacts.Versioned { return s3Store(t, artifacts.S3Config{}) },
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := t.Context()
			_, _, err := s.GetVersion(ctx, "r1/lease.json")
			assert.ErrorIs(t, err, artifacts.ErrNotExist)

			v1, err := s.PutIf(ctx, "r1/lease.json", []byte(`{"holder":"a"}`), "")
			require.NoError(t, err)
			_, err = s.PutIf(ctx, "r1/lease.json", []byte(`{"holder":"b"}`), "")
			assert.ErrorIs(t, err, artifacts.ErrPrecondition, "create only when nothing is stored")

			data, v, err := s.GetVersion(ctx, "r1/lease.json")
			require.NoError(t, err)
			assert.Equal(t, `{"holder":"a"}`, string(data))
			assert.Equal(t, v1, v)

			v2, err := s.PutIf(ctx, "r1/lease.json", []byte(`{"holder":"a","n":2}`), v1)
			require.NoError(t, err)
			assert.NotEqual(t, v1, v2)
			_, err = s.PutIf(ctx, "r1/lease.json", []byte(`{"holder":"b"}`), v1)
			assert.ErrorIs(t, err, artifacts.ErrPrecondition, "a version read before the last write")

			var wins, lost int
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					_, err := s.PutIf(ctx, "r1/lease.json", []byte{byte('0' + i)}, v2)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						wins++
					case errors.Is(err, artifacts.ErrPrecondition):
						lost++
					default:
						t.Error(err)
					}
				})
			}
			wg.Wait()
			assert.Equal(t, 1, wins, "one writer of version v2 wins")
			assert.Equal(t, 7, lost)
			keys, err := s.List(ctx, "r1/")
			require.NoError(t, err)
			require.Len(t, keys, 1, "no lock file is listed")
		})
	}
}
