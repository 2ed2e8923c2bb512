package githubtest_test

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot/githubtest"
)

func TestTreeFilesLeavesGitOut(t *testing.T) {
	files, err := githubtest.TreeFiles(fstest.MapFS{
		"domains/a.example/domain.json": {Data: []byte(`{"start_urls": []}`)},
		".pairbench.yml":                {Data: []byte("v: 1\n")},
		".git/HEAD":                     {Data: []byte("ref: refs/heads/master\n")},
		"docs/.git/kept":                {Data: []byte("not the repository's own")},
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"domains/a.example/domain.json": `{"start_urls": []}`,
		".pairbench.yml":                "v: 1\n",
		"docs/.git/kept":                "not the repository's own",
	}, files)
}
