package artifacts

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Open returns the Store a location names, so one flag can choose either:
//
//   - a directory path, or a file:// URL: a Local store there;
//   - s3://BUCKET[/PREFIX][?endpoint=URL&region=R&path_style=true]: an S3
//     store. Credentials come from the AWS SDK's default chain
//     (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, ...), never
//     from the location, so it can be logged.
//
// Open does not contact S3; call (*S3).Check for that.
func Open(ctx context.Context, location string) (Store, error) {
	if location == "" {
		return nil, fmt.Errorf("artifacts: empty store location")
	}
	if !strings.Contains(location, "://") {
		return NewLocal(location)
	}
	u, err := url.Parse(location)
	if err != nil {
		return nil, fmt.Errorf("artifacts: store location: %w", err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("artifacts: store location %q: file URL names host %q", location, u.Host)
		}
		return NewLocal(u.Path)
	case "s3":
		return openS3(ctx, u)
	default:
		return nil, fmt.Errorf("artifacts: store location %q: unknown scheme %q; want a directory, file:// or s3://", location, u.Scheme)
	}
}

func openS3(ctx context.Context, u *url.URL) (*S3, error) {
	if u.User != nil {
		return nil, fmt.Errorf("artifacts: store location s3://%s: credentials do not belong in the location; use AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", u.Host)
	}
	cfg := S3Config{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	q := u.Query()
	for k := range q {
		switch k {
		case "endpoint", "region", "path_style":
		default:
			return nil, fmt.Errorf("artifacts: store location s3://%s: unknown parameter %q (want endpoint, region, path_style)", u.Host, k)
		}
	}
	cfg.Endpoint = q.Get("endpoint")
	cfg.Region = q.Get("region")
	if v := q.Get("path_style"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("artifacts: store location s3://%s: path_style=%q: want true or false", u.Host, v)
		}
		cfg.PathStyle = b
	}
	return NewS3(ctx, cfg)
}
