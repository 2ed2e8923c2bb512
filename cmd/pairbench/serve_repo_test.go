package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// What the service's tests share, the end-to-end ones (serve_e2e_test.go,
// behind the e2e build tag) and the others: a registry repository and the
// pull request that changes it.

// registryRepo commits the example registry (at the repository's root, as
// a registry repository has it) as the base commit, and on it the head
// commit of a pull request that edits a weather.example tool
// (domains/weather.example/tools/list_cities.js), and returns the
// repository and both commits.
func registryRepo(t *testing.T) (dir, head, base string) {
	t.Helper()
	dir = t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("../../examples/registry")))
	base = commitAll(t, dir)
	f, err := os.OpenFile(filepath.Join(dir, "domains", "weather.example", "tools", "list_cities.js"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("// this pull request's edit\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	cmd := exec.Command("git", "-C", dir, "commit", "--quiet", "-am", "edit a tool")
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	cmd = exec.Command("git", "-C", dir, "rev-parse", "HEAD")
	out, err = cmd.Output()
	require.NoError(t, err)
	return dir, strings.TrimSpace(string(out)), base
}

// pullRequestOpened is GitHub's example pull_request.opened payload with its
// head moved to sha and its base to base ("" leaves the payload without a
// base commit: the bench is against no tools).
func pullRequestOpened(t *testing.T, sha, base string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "bot", "testdata", "webhooks", "pull_request.opened.json"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	pr := m["pull_request"].(map[string]any)
	pr["head"].(map[string]any)["sha"] = sha
	if base == "" {
		delete(pr["base"].(map[string]any), "sha")
	} else {
		pr["base"].(map[string]any)["sha"] = base
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}
