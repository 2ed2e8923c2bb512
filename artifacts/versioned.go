package artifacts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// ErrPrecondition is wrapped by the error of a conditional write
// (Versioned.PutIf) whose condition did not hold: another writer changed
// or created the object first.
var ErrPrecondition = errors.New("the stored object is not the one the writer read")

// MaxVersioned bounds the objects GetVersion reads: small records such as
// a run's lease.
const MaxVersioned = 1 << 20

// Versioned is a Store that can compare and swap a small object across
// machines: read it with its version, and write it only if the stored
// version is still the one read. Local and S3 are Versioned (S3 through
// its conditional writes, If-Match and If-None-Match).
type Versioned interface {
	Store
	// GetVersion reads the object at key (at most MaxVersioned bytes) and
	// its version. A missing object yields an error wrapping ErrNotExist.
	GetVersion(ctx context.Context, key string) (data []byte, version string, err error)
	// PutIf stores data under key only if the stored object's version is
	// match or, with match "", only if no object is stored, and returns
	// the new version. Otherwise it fails with an error wrapping
	// ErrPrecondition and stores nothing.
	PutIf(ctx context.Context, key string, data []byte, match string) (version string, err error)
}

// GetVersion implements Versioned: the version is the content's SHA-256.
func (l *Local) GetVersion(ctx context.Context, key string) ([]byte, string, error) {
	if err := ValidKey(key); err != nil {
		return nil, "", err
	}
	data, err := readSmall(l.path(key))
	if err != nil {
		return nil, "", l.pathErr("get", key, err)
	}
	return data, contentVersion(data), nil
}

// PutIf implements Versioned. Writers of one key take turns on a lock
// file beside it (a dot name, which List leaves out), so a check and its
// write are one step for every process on the machine.
func (l *Local) PutIf(ctx context.Context, key string, data []byte, match string) (string, error) {
	if err := ValidKey(key); err != nil {
		return "", err
	}
	p := l.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("artifacts: put %s: %w", key, err)
	}
	lock, err := os.OpenFile(filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("artifacts: put %s: %w", key, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("artifacts: put %s: lock: %w", key, err)
	}
	current, err := readSmall(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if match != "" {
			return "", fmt.Errorf("artifacts: put %s: %w (it is gone)", key, ErrPrecondition)
		}
	case err != nil:
		return "", fmt.Errorf("artifacts: put %s: %w", key, err)
	case match == "" || contentVersion(current) != match:
		return "", fmt.Errorf("artifacts: put %s: %w", key, ErrPrecondition)
	}
	if err := l.put(ctx, key, bytes.NewReader(data)); err != nil {
		return "", fmt.Errorf("artifacts: put %s: %w", key, err)
	}
	return contentVersion(data), nil
}

func readSmall(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxVersioned))
}

func contentVersion(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// GetVersion implements Versioned: the version is the object's ETag.
func (s *S3) GetVersion(ctx context.Context, key string) ([]byte, string, error) {
	if err := ValidKey(key); err != nil {
		return nil, "", err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.fullKey(key))})
	if err != nil {
		return nil, "", s.opErr("get", key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, MaxVersioned))
	if err != nil {
		return nil, "", s.opErr("get", key, err)
	}
	return data, aws.ToString(out.ETag), nil
}

// PutIf implements Versioned with S3's conditional writes: If-None-Match: *
// creates, If-Match: <ETag> replaces. A service that answers 412
// (PreconditionFailed) or 409 (ConditionalRequestConflict, a concurrent
// conditional write) refused it.
func (s *S3) PutIf(ctx context.Context, key string, data []byte, match string) (string, error) {
	if err := ValidKey(key); err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	in := &s3.PutObjectInput{Bucket: &s.bucket, Key: aws.String(s.fullKey(key)), Body: bytes.NewReader(data),
		ContentType: aws.String(contentType(key)), Metadata: map[string]string{ChecksumMeta: hex.EncodeToString(sum[:])}}
	if match == "" {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(match)
	}
	out, err := s.client.PutObject(ctx, in)
	if err != nil {
		var api smithy.APIError
		if errors.As(err, &api) {
			switch api.ErrorCode() {
			case "PreconditionFailed", "ConditionalRequestConflict":
				return "", fmt.Errorf("artifacts: put %s%s: %w: %w", s, key, ErrPrecondition, err)
			}
		}
		if isNotFound(err) && match != "" {
			return "", fmt.Errorf("artifacts: put %s%s: %w (it is gone): %w", s, key, ErrPrecondition, err)
		}
		return "", s.opErr("put", key, err)
	}
	return aws.ToString(out.ETag), nil
}

var (
	_ Versioned = (*Local)(nil)
	_ Versioned = (*S3)(nil)
)
