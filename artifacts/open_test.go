package artifacts_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts"
)

func TestOpenLocal(t *testing.T) {
	dir := t.TempDir()
	for _, loc := range []string{dir, "file://" + filepath.ToSlash(dir)} {
		s, err := artifacts.Open(t.Context(), loc)
		require.NoError(t, err, "Open(%q)", loc)
		l, ok := s.(*artifacts.Local)
		require.True(t, ok, "Open(%q) = %T; want *artifacts.Local", loc, s)
		assert.Equal(t, dir, l.Root())
	}
}

func TestOpenS3UsesEnvironmentCredentials(t *testing.T) {
	needGateway(t)
	t.Setenv("AWS_ACCESS_KEY_ID", gwAccess)
	t.Setenv("AWS_SECRET_ACCESS_KEY", gwSecret)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))

	loc := "s3://" + gwBucket + "/TestOpenS3/runs?path_style=true&region=us-east-1&endpoint=" + gw.Endpoint
	s, err := artifacts.Open(t.Context(), loc)
	require.NoError(t, err)
	s3s, ok := s.(*artifacts.S3)
	require.True(t, ok, "Open(%q) = %T; want *artifacts.S3", loc, s)
	assert.Equal(t, "s3://"+gwBucket+"/TestOpenS3/runs/", s3s.String())
	require.NoError(t, s3s.Check(t.Context()))
	require.NoError(t, s.Put(t.Context(), "r/rows.jsonl", strings.NewReader("{}\n")))

	_, err = s3s.Client().HeadObject(t.Context(), headInput(gwBucket, "TestOpenS3/runs/r/rows.jsonl"))
	assert.NoError(t, err, "the object lands under the location's prefix")
}

func TestOpenRefusesBadLocations(t *testing.T) {
	for _, loc := range []string{
		"",
		"ftp://host/x",
		"s3://",
		"s3://bucket/../x",
		"s3://bucket?colour=blue",
		"s3://key:secret@bucket/x",
		"s3://bucket?path_style=maybe",
		"file://otherhost/x",
	} {
		_, err := artifacts.Open(t.Context(), loc)
		assert.Error(t, err, "Open(%q)", loc)
	}
}
