// Package artifacts stores a run's files — run.json, rows.jsonl, trial
// directories, reports — under run-relative keys, in a local directory or in
// an S3-compatible bucket, with the same layout in both.
//
// A key is a slash-separated relative path such as "<run_id>/rows.jsonl".
// Keys are validated before any I/O (see ValidKey); a key that could escape
// the store's root is refused with an error wrapping ErrInvalidKey.
//
// Every adapter satisfies the same contract, checked by package storetest:
// objects are published whole (a reader never sees a half-written object),
// a missing object is reported with an error wrapping ErrNotExist, and List
// returns keys in byte order.
package artifacts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrNotExist is wrapped by every error that reports a missing object.
// Test for it with errors.Is.
var ErrNotExist = errors.New("artifact does not exist")

// ErrInvalidKey is wrapped by every error that reports a key or prefix
// refused by ValidKey. Test for it with errors.Is.
var ErrInvalidKey = errors.New("invalid artifact key")

// MaxKeyLen is the longest key accepted, in bytes (S3's limit, less room for
// a store prefix).
const MaxKeyLen = 900

// MaxPresignTTL is the longest lifetime a presigned link may have (S3's limit
// for SigV4 presigned URLs).
const MaxPresignTTL = 7 * 24 * time.Hour

// Info describes one stored object.
type Info struct {
	Key     string    // the object's key, as given to Put
	Size    int64     // length in bytes
	ModTime time.Time // when the object was last written, as the store reports it
}

// Store holds objects under run-relative keys. Implementations are safe for
// concurrent use.
type Store interface {
	// Put stores everything read from r under key, replacing any object
	// already there. The object becomes visible only once r has been read to
	// EOF and stored in full; if Put returns an error, readers see the previous
	// object (or none), never part of the new one.
	Put(ctx context.Context, key string, r io.Reader) error

	// Get opens the object at key. The caller must close the reader. A missing
	// object yields an error wrapping ErrNotExist.
	Get(ctx context.Context, key string) (io.ReadCloser, error)

	// Stat describes the object at key. A missing object yields an error
	// wrapping ErrNotExist.
	Stat(ctx context.Context, key string) (Info, error)

	// List describes every object whose key starts with prefix (a plain
	// string prefix; "" lists everything), sorted by key in byte order.
	// No match is an empty result, not an error.
	List(ctx context.Context, prefix string) ([]Info, error)

	// Delete removes the object at key. Deleting a missing object succeeds.
	Delete(ctx context.Context, key string) error

	// Presign returns a URL from which the object at key can be read without
	// further credentials for at least ttl (0 < ttl <= MaxPresignTTL): an
	// http(s) link for S3, a file:// URL for a local directory. A missing
	// object yields an error wrapping ErrNotExist.
	Presign(ctx context.Context, key string, ttl time.Duration) (string, error)
}

// Exists reports whether an object is stored at key.
func Exists(ctx context.Context, s Store, key string) (bool, error) {
	_, err := s.Stat(ctx, key)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotExist):
		return false, nil
	default:
		return false, err
	}
}

// ValidKey checks that key is a run-relative slash path that stays inside
// the store: not empty, at most MaxKeyLen bytes of valid UTF-8 without
// control characters or backslashes, not absolute, and made of non-empty
// segments none of which starts with a dot (so ".", ".." and hidden names
// are refused; the local adapter keeps its temporary files under dot names).
// The returned error wraps ErrInvalidKey.
func ValidKey(key string) error {
	if err := checkPath(key); err != nil {
		return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, err)
	}
	return nil
}

// validPrefix checks a List prefix: "" (everything), or a key, or a key with
// a trailing slash, or a key whose last segment is cut short.
func validPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if err := checkPath(strings.TrimSuffix(prefix, "/")); err != nil {
		return fmt.Errorf("%w: prefix %q: %s", ErrInvalidKey, prefix, err)
	}
	return nil
}

// checkPath returns why p is not a valid key, as a phrase, or nil.
func checkPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty key")
	case len(p) > MaxKeyLen:
		return fmt.Errorf("longer than %d bytes", MaxKeyLen)
	case !utf8.ValidString(p):
		return errors.New("not valid UTF-8")
	case strings.ContainsRune(p, '\\'):
		return errors.New("contains a backslash; keys use forward slashes")
	case strings.HasPrefix(p, "/"):
		return errors.New("absolute; keys are relative to the run store")
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return errors.New("contains a control character")
		}
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch {
		case seg == "":
			return errors.New("has an empty segment (leading, trailing or doubled slash)")
		case seg == "..":
			return errors.New(`has a ".." segment, which would escape the store`)
		case seg == ".":
			return errors.New(`has a "." segment`)
		case strings.HasPrefix(seg, "."):
			return fmt.Errorf("segment %q starts with a dot; hidden names are reserved", seg)
		}
	}
	return nil
}

// checkTTL validates a presigned link lifetime.
func checkTTL(ttl time.Duration) error {
	if ttl <= 0 || ttl > MaxPresignTTL {
		return fmt.Errorf("presign ttl %v out of range (0, %v]", ttl, MaxPresignTTL)
	}
	return nil
}
