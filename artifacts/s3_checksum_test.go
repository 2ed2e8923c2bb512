package artifacts_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts"
)

// truncatingProxy forwards to the gateway, but while cut is set it cuts
// every object a GET returns to its first half and answers 200 with the
// shorter length, headers otherwise as the gateway sent them: a store or a
// middlebox that lost the end of an object and says nothing.
// With checksums false it also drops the x-amz-checksum-* headers, as a
// store without S3's checksums sends none.
func truncatingProxy(t *testing.T, checksums bool) (endpoint string, cut *atomic.Bool) {
	t.Helper()
	needGateway(t)
	target, err := url.Parse(gw.Endpoint)
	require.NoError(t, err)
	cut = &atomic.Bool{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		if !cut.Load() || resp.Request.Method != http.MethodGet || resp.StatusCode != http.StatusOK || resp.Request.URL.Query().Has("list-type") {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		body = body[:len(body)/2]
		for h := range resp.Header {
			if !checksums && strings.HasPrefix(strings.ToLower(h), "x-amz-checksum-") {
				resp.Header.Del(h)
			}
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL, cut
}

// TestS3TruncatedBodyIsAnError: an object whose GET comes back cut short
// with status 200 is not taken for the object: reading it fails, naming the
// object, whether the store sends S3's checksum of it (which the SDK checks)
// or none (the SHA-256 stored at upload catches it).
func TestS3TruncatedBodyIsAnError(t *testing.T) {
	for name, checksums := range map[string]bool{"the store sends its checksum": true, "the store sends no checksum": false} {
		t.Run(name, func(t *testing.T) {
			endpoint, cut := truncatingProxy(t, checksums)
			s := s3Store(t, artifacts.S3Config{Endpoint: endpoint, MaxAttempts: 1})
			data := strings.Repeat("a row of the run\n", 1000)
			require.NoError(t, s.Put(t.Context(), "r/rows.jsonl", strings.NewReader(data)))
			read := func() ([]byte, error) {
				rc, err := s.Get(t.Context(), "r/rows.jsonl")
				if err != nil {
					return nil, err
				}
				defer rc.Close()
				return io.ReadAll(rc)
			}
			got, err := read()
			require.NoError(t, err, "read whole")
			require.Equal(t, data, string(got))

			cut.Store(true)
			got, err = read()
			require.Error(t, err, "a truncated object was read as %d bytes of %d", len(got), len(data))
			assert.ErrorContains(t, err, "r/rows.jsonl")
		})
	}
}
