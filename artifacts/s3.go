package artifacts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3Config locates a bucket on any S3-compatible service.
type S3Config struct {
	// Bucket holds the objects. It must exist.
	Bucket string
	// Prefix, if set, is prepended to every key, so several stores can share
	// a bucket: with Prefix "pairbench", the key "r1/rows.jsonl" is stored as
	// "pairbench/r1/rows.jsonl". It follows the key rules (see ValidKey).
	Prefix string
	// Region signs requests; default AWS_REGION from the environment, else
	// "us-east-1".
	Region string
	// Endpoint is the service's base URL, e.g. "http://127.0.0.1:7070" for a
	// local server. Empty means AWS (or AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL
	// from the environment).
	Endpoint string
	// PathStyle addresses the bucket as a path (endpoint/bucket/key) rather
	// than a host name (bucket.endpoint/key). Most non-AWS servers need it.
	PathStyle bool
	// AccessKeyID and SecretAccessKey (and SessionToken, if any) are static
	// credentials. Left empty, the AWS SDK's default chain is used: the
	// environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
	// AWS_PROFILE), shared config files, then the platform's role.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// MaxAttempts bounds the tries of each request, the first included;
	// default 5. Throttling, 5xx answers and connection errors are retried
	// with exponential backoff and jitter, capped at MaxBackoff (default 20s).
	MaxAttempts int
	MaxBackoff  time.Duration
	// PartSize is the multipart upload part size; default 8 MiB, minimum
	// 5 MiB. Objects of at least 2×PartSize (16 MiB by default) are uploaded
	// in parts.
	PartSize int64
	// HTTPClient, if set, carries every request.
	HTTPClient *http.Client
}

// minPartSize is S3's smallest multipart part (except the last).
const minPartSize = 5 << 20

// S3 is a Store in an S3-compatible bucket. Uploads go through the SDK's
// transfer manager, in parts for large objects; an upload that fails is
// aborted, so the previous object (or none) stays visible.
type S3 struct {
	client  *s3.Client
	tm      *transfermanager.Client
	presign *s3.PresignClient
	bucket  string
	prefix  string // "" or ends with "/"
	// whole is the largest object uploaded in one request (smaller than
	// the multipart threshold): Put hashes it before sending, and stores
	// its SHA-256 with it.
	whole int64
}

var _ Store = (*S3)(nil)

// NewS3 returns a Store for cfg. It does not contact the service; call
// Check to verify the bucket and credentials.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("artifacts: s3: no bucket")
	}
	prefix := strings.TrimSuffix(cfg.Prefix, "/")
	if prefix != "" {
		if err := ValidKey(prefix); err != nil {
			return nil, fmt.Errorf("artifacts: s3: prefix: %w", err)
		}
		prefix += "/"
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 20 * time.Second
	}
	if cfg.PartSize == 0 {
		cfg.PartSize = 8 << 20
	}
	if cfg.PartSize < minPartSize {
		return nil, fmt.Errorf("artifacts: s3: part size %d below the minimum %d", cfg.PartSize, minPartSize)
	}
	if (cfg.AccessKeyID == "") != (cfg.SecretAccessKey == "") {
		return nil, errors.New("artifacts: s3: give both access key id and secret access key, or neither")
	}

	opts := []func(*config.LoadOptions) error{
		config.WithDefaultRegion("us-east-1"),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.MaxAttempts
				o.MaxBackoff = cfg.MaxBackoff
			})
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, config.WithHTTPClient(cfg.HTTPClient))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("artifacts: s3: load AWS config: %w", err)
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		o.UsePathStyle = cfg.PathStyle
		// A multipart object has no whole-object checksum to validate on GET;
		// the SDK would log a warning on every such read.
		o.DisableLogOutputChecksumValidationSkipped = true
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return &S3{
		client: client,
		tm: transfermanager.New(client, func(o *transfermanager.Options) {
			o.PartSizeBytes = cfg.PartSize
			o.MultipartUploadThreshold = 2 * cfg.PartSize
			// Abort a failed multipart upload even when ctx is what failed.
			o.FailTimeout = 30 * time.Second
		}),
		presign: s3.NewPresignClient(client),
		bucket:  cfg.Bucket,
		prefix:  prefix,
		whole:   2*cfg.PartSize - 1,
	}, nil
}

// String describes the store for logs.
func (s *S3) String() string { return "s3://" + s.bucket + "/" + s.prefix }

// Check verifies that the bucket exists and the credentials may use it.
func (s *S3) Check(ctx context.Context) error {
	if _, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.bucket}); err != nil {
		return fmt.Errorf("artifacts: check bucket %s: %w", s.bucket, err)
	}
	return nil
}

func (s *S3) fullKey(key string) string { return s.prefix + key }

// Put implements Store. An object smaller than the multipart threshold
// (2×PartSize) is read whole first and stored with its SHA-256 as the
// metadata ChecksumMeta, which Get checks every read against. A larger
// object is uploaded in parts as it is read, and stored without it: its
// hash is known only once its last part is sent, and S3 metadata cannot be
// added to an object after it is written (short of copying it whole).
func (s *S3) Put(ctx context.Context, key string, r io.Reader) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	full := s.fullKey(key)
	head, err := io.ReadAll(io.LimitReader(r, s.whole+1))
	if err != nil {
		return fmt.Errorf("artifacts: put %s%s: read: %w", s, key, err)
	}
	in := &transfermanager.UploadObjectInput{
		Bucket:      &s.bucket,
		Key:         &full,
		Body:        bytes.NewReader(head),
		ContentType: aws.String(contentType(key)),
	}
	if int64(len(head)) <= s.whole {
		sum := sha256.Sum256(head)
		in.Metadata = map[string]string{ChecksumMeta: hex.EncodeToString(sum[:])}
	} else {
		in.Body = io.MultiReader(bytes.NewReader(head), r)
	}
	if _, err := s.tm.UploadObject(ctx, in); err != nil {
		return s.opErr("put", key, err)
	}
	return nil
}

// ChecksumMeta is the S3 user metadata (x-amz-meta-pairbench-sha256) in
// which Put stores the hex SHA-256 of an object uploaded in one request.
const ChecksumMeta = "pairbench-sha256"

// Get implements Store. The reader is valid while ctx is. Reading an
// object that Put stored with its SHA-256 (ChecksumMeta) fails at its end,
// instead of reporting EOF, when what was read is not what was stored (a
// response cut short or changed on the way, even with status 200); any
// read error names the object.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ValidKey(key); err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.fullKey(key))})
	if err != nil {
		return nil, s.opErr("get", key, err)
	}
	v := &verifiedBody{body: out.Body, hash: sha256.New(), name: s.String() + key}
	for k, val := range out.Metadata {
		if strings.EqualFold(k, ChecksumMeta) {
			v.want = val
		}
	}
	return v, nil
}

// verifiedBody reads an object's body, checking at its end that its
// SHA-256 is want (when want is set).
type verifiedBody struct {
	body io.ReadCloser
	hash hash.Hash
	want string // hex SHA-256 stored at upload; "" when none was
	name string
	n    int64
}

func (v *verifiedBody) Read(p []byte) (int, error) {
	n, err := v.body.Read(p)
	v.hash.Write(p[:n])
	v.n += int64(n)
	switch {
	case err == nil:
		return n, nil
	case !errors.Is(err, io.EOF):
		return n, fmt.Errorf("artifacts: get %s: read: %w", v.name, err)
	case v.want != "" && hex.EncodeToString(v.hash.Sum(nil)) != v.want:
		return n, fmt.Errorf("artifacts: get %s: the %d bytes read are not the object stored: their SHA-256 is not the one recorded at upload (a response cut short or changed on the way)", v.name, v.n)
	}
	return n, err
}

func (v *verifiedBody) Close() error { return v.body.Close() }

// Stat implements Store.
func (s *S3) Stat(ctx context.Context, key string) (Info, error) {
	if err := ValidKey(key); err != nil {
		return Info{}, err
	}
	return s.stat(ctx, "stat", key)
}

func (s *S3) stat(ctx context.Context, op, key string) (Info, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.fullKey(key))})
	if err != nil {
		return Info{}, s.opErr(op, key, err)
	}
	return Info{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
}

// List implements Store. Objects in the bucket whose names are not valid
// keys (directory markers such as "a/", for example) are left out.
func (s *S3) List(ctx context.Context, prefix string) ([]Info, error) {
	if err := validPrefix(prefix); err != nil {
		return nil, err
	}
	var out []Info
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: &s.bucket,
		Prefix: aws.String(s.fullKey(prefix)),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("artifacts: list %s%s: %w", s, prefix, err)
		}
		for _, o := range page.Contents {
			key, ok := strings.CutPrefix(aws.ToString(o.Key), s.prefix)
			if !ok || ValidKey(key) != nil {
				continue
			}
			out = append(out, Info{Key: key, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)})
		}
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.fullKey(key))})
	if err != nil && !isNotFound(err) {
		return s.opErr("delete", key, err)
	}
	return nil
}

// Presign implements Store: it returns a SigV4 presigned GET URL valid for
// ttl. It checks that the object exists first.
func (s *S3) Presign(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if err := ValidKey(key); err != nil {
		return "", err
	}
	if err := checkTTL(ttl); err != nil {
		return "", fmt.Errorf("artifacts: presign %s: %w", key, err)
	}
	if _, err := s.stat(ctx, "presign", key); err != nil {
		return "", err
	}
	req, err := s.presign.PresignGetObject(ctx,
		&s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.fullKey(key))},
		s3.WithPresignExpires(ttl))
	if err != nil {
		return "", s.opErr("presign", key, err)
	}
	return req.URL, nil
}

// opErr wraps an SDK error with the operation and object, adding
// ErrNotExist when the service said the object is missing.
func (s *S3) opErr(op, key string, err error) error {
	if isNotFound(err) {
		return fmt.Errorf("artifacts: %s %s%s: %w: %w", op, s, key, ErrNotExist, err)
	}
	return fmt.Errorf("artifacts: %s %s%s: %w", op, s, key, err)
}

// isNotFound reports whether err is S3's answer for a missing object:
// NoSuchKey from GET, a bodiless 404 (NotFound) from HEAD.
func isNotFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return true
		}
	}
	return false
}

// contentType picks the Content-Type stored with an object, so a presigned
// link to report.html opens in a browser.
func contentType(key string) string {
	switch ext := path.Ext(key); ext {
	case ".jsonl":
		return "application/x-ndjson"
	case ".md":
		return "text/markdown; charset=utf-8"
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
		return "application/octet-stream"
	}
}
