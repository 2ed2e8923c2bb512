package clitest

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts/s3test"
	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/browser/kernel/kerneltest"
	"github.com/pairbench/pairbench/examples/site"
	"github.com/pairbench/pairbench/report"
)

// Credentials of the test S3 server; the CLI reads them from the AWS
// variables, as it would on a runner.
const (
	S3Access = "pairbench-merge-test"
	S3Secret = "pairbench-merge-test-secret-0123"
	S3Bucket = "runs"
)

// StartS3 starts a real S3 server with one bucket for the test, sets the
// AWS credential variables, and returns an s3:// store location under
// prefix.
func StartS3(t *testing.T, prefix string) string {
	t.Helper()
	bin, err := filepath.Abs("../../tools/bin/versitygw")
	require.NoError(t, err)
	s := s3test.StartT(t, bin, S3Access, S3Secret, S3Bucket)
	t.Setenv("AWS_ACCESS_KEY_ID", S3Access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", S3Secret)
	t.Setenv("AWS_REGION", s3test.Region)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // never dial the metadata service
	return fmt.Sprintf("s3://%s/%s?endpoint=%s&path_style=true&region=%s", S3Bucket, prefix, s.Endpoint, s3test.Region)
}

// App registers a GitHub App with the fake and returns its id and
// private key, for serve's App mode.
func App(t *testing.T, gh *githubtest.Server) (int64, []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	gh.AddApp(4242, &key.PublicKey)
	return 4242, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

// RegistryRepo commits the example registry (at the repository's root, as
// a registry repository has it) as the base commit, and on it the head
// commit of a pull request that edits a weather.example tool
// (domains/weather.example/tools/list_cities.js), and returns the
// repository and both commits.
func RegistryRepo(t *testing.T) (dir, head, base string) {
	t.Helper()
	dir = t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(ExampleRegistry)))
	base = CommitAll(t, dir)
	f, err := os.OpenFile(filepath.Join(dir, "domains", "weather.example", "tools", "list_cities.js"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("// this pull request's edit\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	git := GitIn(t, dir)
	git("commit", "--quiet", "-am", "edit a tool")
	return dir, git("rev-parse", "HEAD"), base
}

// PullRequestOpened is GitHub's example pull_request.opened payload with its
// head moved to sha and its base to base ("" leaves the payload without a
// base commit: the bench is against no tools).
func PullRequestOpened(t *testing.T, sha, base string) []byte {
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

// CommitAll commits everything in dir as a new repository's first commit
// and returns its id.
func CommitAll(t *testing.T, dir string) string {
	t.Helper()
	git := GitIn(t, dir)
	git("init", "--quiet", "-b", "master")
	git("add", ".")
	git("commit", "--quiet", "-m", "registry")
	return git("rev-parse", "HEAD")
}

// GitIn returns a function that runs git in dir with a fixed identity and no
// user configuration, failing the test on an error, and returns its
// trimmed output.
func GitIn(t *testing.T, dir string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
}

// AppendLine appends line to the file at path, failing the test on an
// error.
func AppendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(line)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// KernelForExampleSites starts a fake Kernel whose browsers reach the
// example sites, served on loopback, by their host names, with its key in
// KERNEL_API_KEY.
func KernelForExampleSites(t *testing.T) *kerneltest.Server {
	srv := httptest.NewServer(site.New())
	t.Cleanup(srv.Close)
	hosts := map[string]string{}
	for _, h := range site.Hosts() {
		hosts[h] = strings.TrimPrefix(srv.URL, "http://")
	}
	fake := kerneltest.Start(t, hosts, nil)
	t.Setenv("KERNEL_API_KEY", fake.Key)
	return fake
}

// ReadReport reads the report.json of the run directory dir.
func ReadReport(t *testing.T, dir string) *report.Report {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	defer f.Close()
	rep, err := report.ReadJSON(f)
	require.NoError(t, err)
	return rep
}

// BrokenCopy copies the example registry to a temporary directory, applies
// the replacements (file, old, new) and returns the directory.
func BrokenCopy(t *testing.T, edits ...[3]string) string {
	t.Helper()
	dst := t.TempDir()
	require.NoError(t, os.CopyFS(dst, os.DirFS(ExampleRegistry)))
	require.NoError(t, filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chmod(p, 0o755)
		} else if err == nil {
			err = os.Chmod(p, 0o644)
		}
		return err
	}))
	for _, e := range edits {
		p := filepath.Join(dst, e[0])
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Contains(t, string(b), e[1])
		require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(b), e[1], e[2], 1)), 0o644))
	}
	return dst
}

// LockedBuffer is an io.Writer a test reads while a command writes it.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
