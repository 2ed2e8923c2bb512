package artifacts_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/artifacts/s3test"
	"github.com/pairbench/pairbench/artifacts/storetest"
	"github.com/pairbench/pairbench/internal/realstack"
)

// The S3 adapter is tested against a real S3 server, versitygw, built into
// tools/bin by scripts/setup.sh. One server serves the whole package.

const (
	gwAccess = "pairbench-test"
	gwSecret = "pairbench-test-secret-0123456789"
	gwBucket = "artifacts"
)

// gw is the package's S3 server, or gwErr why it could not start.
var (
	gw    *gateway
	gwErr error
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == putterArg {
		os.Exit(runPutter(os.Args[2:]))
	}
	gw, gwErr = startGateway()
	code := m.Run()
	if gw != nil {
		gw.stop()
	}
	os.Exit(code)
}

// gateway is the package's running S3 server.
type gateway struct{ *s3test.Server }

func startGateway() (*gateway, error) {
	bin, err := filepath.Abs("../tools/bin/versitygw")
	if err != nil {
		return nil, err
	}
	srv, err := s3test.Start(bin, gwAccess, gwSecret)
	if err != nil {
		return nil, err
	}
	g := &gateway{srv}
	s, err := g.store(context.Background(), artifacts.S3Config{})
	if err != nil {
		g.stop()
		return nil, err
	}
	if _, err := s.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(gwBucket)}); err != nil {
		g.stop()
		return nil, fmt.Errorf("create bucket: %w", err)
	}
	return g, nil
}

func (g *gateway) stop() { g.Close() }

// needGateway is realstack.Need for the package's S3 server, failing the
// test when it is installed and did not start.
func needGateway(t *testing.T) {
	t.Helper()
	realstack.Need(t, realstack.S3Server)
	require.NoError(t, gwErr, "the S3 server for these tests did not start")
}

// store returns an S3 store on the gateway; cfg's zero fields are filled in.
func (g *gateway) store(ctx context.Context, cfg artifacts.S3Config) (*artifacts.S3, error) {
	if cfg.Endpoint == "" {
		cfg.Endpoint = g.Endpoint
	}
	if cfg.Bucket == "" {
		cfg.Bucket = gwBucket
	}
	if cfg.AccessKeyID == "" {
		cfg.AccessKeyID, cfg.SecretAccessKey = gwAccess, gwSecret
	}
	cfg.PathStyle = true
	return artifacts.NewS3(ctx, cfg)
}

// storeSeq numbers the stores s3Store hands out, so that repeated runs
// (-count) never share a prefix.
var storeSeq atomic.Int64

// s3Store returns a store on the package's gateway under a prefix of its
// own, so every test starts empty.
func s3Store(t *testing.T, cfg artifacts.S3Config) *artifacts.S3 {
	t.Helper()
	needGateway(t)
	if cfg.Prefix == "" {
		cfg.Prefix = fmt.Sprintf("%s/%d", t.Name(), storeSeq.Add(1))
	}
	s, err := gw.store(t.Context(), cfg)
	require.NoError(t, err)
	return s
}

func TestS3Contract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) artifacts.Store { return s3Store(t, artifacts.S3Config{}) })
}

func TestS3LargeObjectIsUploadedInParts(t *testing.T) {
	s := s3Store(t, artifacts.S3Config{})
	data := bytes.Repeat([]byte("0123456789abcdef"), storetest.LargeSize/16)
	require.NoError(t, s.Put(t.Context(), "r/big", bytes.NewReader(data)))

	head, err := s.Client().HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(gwBucket), Key: aws.String(s.FullKey("r/big"))})
	require.NoError(t, err)
	// A multipart object's ETag ends in "-<parts>": 20 MiB in 8 MiB parts is 3.
	assert.True(t, strings.HasSuffix(strings.Trim(aws.ToString(head.ETag), `"`), "-3"),
		"ETag %s; want a 3-part multipart ETag", aws.ToString(head.ETag))
	assert.EqualValues(t, len(data), aws.ToInt64(head.ContentLength))
}

func TestS3WrongSecretIsRefused(t *testing.T) {
	good := s3Store(t, artifacts.S3Config{})
	bad, err := gw.store(t.Context(), artifacts.S3Config{Prefix: strings.TrimPrefix(good.String(), "s3://"+gwBucket+"/"),
		AccessKeyID: gwAccess, SecretAccessKey: "not-the-secret", MaxAttempts: 1})
	require.NoError(t, err)

	assert.Error(t, bad.Check(t.Context()), "Check with a wrong secret")
	err = bad.Put(t.Context(), "r/x", strings.NewReader("x"))
	// The server may close the connection before the SDK reads the error's
	// body (it does under load), so the refusal is the 403 itself; its code
	// is checked whenever the body arrived.
	var refused interface{ HTTPStatusCode() int }
	require.ErrorAs(t, err, &refused, "Put with a wrong secret")
	assert.Equal(t, http.StatusForbidden, refused.HTTPStatusCode())
	if api := smithy.APIError(nil); errors.As(err, &api) {
		assert.Equal(t, "SignatureDoesNotMatch", api.ErrorCode())
	}
	assert.NotErrorIs(t, err, artifacts.ErrNotExist)

	require.NoError(t, good.Check(t.Context()))
	ok, err := artifacts.Exists(t.Context(), good, "r/x")
	require.NoError(t, err)
	assert.False(t, ok, "a refused Put stores nothing")
}

func TestS3MissingBucketIsNotErrNotExist(t *testing.T) {
	needGateway(t)
	s, err := gw.store(t.Context(), artifacts.S3Config{Bucket: "no-such-bucket", MaxAttempts: 1})
	require.NoError(t, err)
	assert.Error(t, s.Check(t.Context()))
	_, err = s.Get(t.Context(), "r/x")
	require.Error(t, err)
	assert.NotErrorIs(t, err, artifacts.ErrNotExist, "a missing bucket is a configuration error, not a missing object")
}

func TestS3PresignedLinkIsSignedAndTyped(t *testing.T) {
	s := s3Store(t, artifacts.S3Config{})
	require.NoError(t, s.Put(t.Context(), "r/report.html", strings.NewReader("<p>verdict")))
	link, err := s.Presign(t.Context(), "r/report.html", time.Minute)
	require.NoError(t, err)

	resp, err := http.Get(link)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, "<p>verdict", string(body))
	assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))

	// The signature covers the key: pointing the link elsewhere is refused.
	require.NoError(t, s.Put(t.Context(), "r/secret.json", strings.NewReader("{}")))
	u, err := url.Parse(link)
	require.NoError(t, err)
	u.Path = strings.Replace(u.Path, "report.html", "secret.json", 1)
	resp, err = http.Get(u.String())
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a tampered presigned link")
}

// flakyProxy forwards to the gateway but answers the first `fail` requests
// with 503 SlowDown, as a busy S3 does.
func flakyProxy(t *testing.T, fail int64) (endpoint string, requests *atomic.Int64) {
	t.Helper()
	needGateway(t)
	target, err := url.Parse(gw.Endpoint)
	require.NoError(t, err)
	// The request keeps the Host it was signed for (the proxy's), which the
	// gateway checks the signature against.
	rp := httputil.NewSingleHostReverseProxy(target)
	requests = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) <= fail {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, requests
}

func TestS3RetriesWithBackoff(t *testing.T) {
	endpoint, requests := flakyProxy(t, 2)
	s := s3Store(t, artifacts.S3Config{Endpoint: endpoint, MaxAttempts: 3, MaxBackoff: 50 * time.Millisecond})
	require.NoError(t, s.Put(t.Context(), "r/rows.jsonl", strings.NewReader("{}\n")), "Put through two 503s")
	assert.EqualValues(t, 3, requests.Load(), "two refused attempts and one that succeeded")

	endpoint, requests = flakyProxy(t, 1000)
	s = s3Store(t, artifacts.S3Config{Endpoint: endpoint, MaxAttempts: 3, MaxBackoff: 50 * time.Millisecond})
	err := s.Put(t.Context(), "r/rows.jsonl", strings.NewReader("{}\n"))
	var api smithy.APIError
	require.ErrorAs(t, err, &api)
	assert.Equal(t, "SlowDown", api.ErrorCode())
	assert.EqualValues(t, 3, requests.Load(), "MaxAttempts bounds the tries")
}

func TestS3ListSkipsForeignObjects(t *testing.T) {
	s := s3Store(t, artifacts.S3Config{})
	require.NoError(t, s.Put(t.Context(), "r/a", strings.NewReader("a")))
	// A directory marker and a hidden name, as other tools leave behind.
	for _, k := range []string{"r/", "r/.keep"} {
		_, err := s.Client().PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(gwBucket), Key: aws.String(s.FullKey(k)), Body: strings.NewReader("")})
		require.NoError(t, err)
	}
	list, err := s.List(t.Context(), "r/")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "r/a", list[0].Key)
}

func TestNewS3Validates(t *testing.T) {
	for name, cfg := range map[string]artifacts.S3Config{
		"no bucket":      {},
		"bad prefix":     {Bucket: "b", Prefix: "../x"},
		"small parts":    {Bucket: "b", PartSize: 1 << 20},
		"half a keypair": {Bucket: "b", AccessKeyID: "id"},
	} {
		_, err := artifacts.NewS3(t.Context(), cfg)
		assert.Error(t, err, name)
	}
}

func headInput(bucket, key string) *s3.HeadObjectInput {
	return &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
}
