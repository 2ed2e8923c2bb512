package artifacts

import "github.com/aws/aws-sdk-go-v2/service/s3"

// Test-only access to the S3 adapter's client, for checks the Store
// interface does not expose (multipart ETags, foreign objects).

func (s *S3) Client() *s3.Client        { return s.client }
func (s *S3) FullKey(key string) string { return s.fullKey(key) }
