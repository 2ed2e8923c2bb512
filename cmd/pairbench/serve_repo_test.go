package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// What the service's tests share, the end-to-end ones (serve_e2e_test.go,
// behind the e2e build tag) and the others: a registry repository and the
// pull request that changes it.

// registryRepo commits the example registry (at the repository's root, as
// a registry repository has it) and returns the repository and commit.
func registryRepo(t *testing.T) (dir, sha string) {
	t.Helper()
	dir = t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("../../examples/registry")))
	return dir, commitAll(t, dir)
}

// pullRequestOpened is GitHub's example pull_request.opened payload with its
// head moved to sha.
func pullRequestOpened(t *testing.T, sha string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "bot", "testdata", "webhooks", "pull_request.opened.json"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = sha
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}
