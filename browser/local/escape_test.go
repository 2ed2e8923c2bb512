package local

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// The browser half of the adversarial suite. The attacker is a hostile
// agent with a raw CDP client (attackArg, not Playwright MCP) inside an
// agent's sandbox handed the trial's browser as the runner hands it, and a
// hostile page the trial's browser loads. Every attempt dials loopback
// only: isolation is shown by failing to reach listeners this test starts
// and files it plants, and by the egress's refusals.

// envCanary is set in the launcher's environment before any browser starts.
const envCanary = "PAIRBENCH_TEST_PROVIDER_KEY"

// canaryListener counts every connection to a loopback port this test
// owns, and answers each with an empty page.
type canaryListener struct {
	l    net.Listener
	mu   sync.Mutex
	hits []string // the request line of each connection
}

func newCanaryListener(t *testing.T) *canaryListener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c := &canaryListener{l: l}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(2 * time.Second))
				line, _ := bufio.NewReader(conn).ReadString('\n')
				c.mu.Lock()
				c.hits = append(c.hits, strings.TrimSpace(line))
				c.mu.Unlock()
				io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
			}()
		}
	}()
	return c
}

func (c *canaryListener) port() int { return c.l.Addr().(*net.TCPAddr).Port }

func (c *canaryListener) connections() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.hits)
}

// recordingHandler keeps every log record's message and attributes.
type recordingHandler struct {
	mu      sync.Mutex
	records []string
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	h.records = append(h.records, b.String())
	h.mu.Unlock()
	return nil
}

func (h *recordingHandler) lines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.records)
}

// attack runs plan's attempts with a raw CDP client inside an agent's
// sandbox that was handed b's DevTools as the runner hands it to a trial's
// agent, and returns what the client got.
func attack(t *testing.T, b *Browser, plan attackPlan) attackResult {
	t.Helper()
	exe := sharedTestBinary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 11*testsite.Patience)
	defer cancel()

	// The hand-off, as runner.Trials.Run and the agent adapters make it.
	dt := b.DevTools()
	plan.CDP = dt.URL
	e, err := sandbox.NewEgress(ctx, sandbox.EgressConfig{ForwardSockets: map[int]string{dt.Port: dt.Socket}, TempDir: sandboxtest.TempDir(t)})
	require.NoError(t, err)
	defer e.Close()
	sb, err := sandbox.New(ctx, sandbox.Policy{Egress: e, Executable: exe, ReadOnly: []string{exe}, TempRoot: sandboxtest.TempDir(t)})
	require.NoError(t, err)
	defer sb.Close()

	planJSON, err := json.Marshal(plan)
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	cmd := sb.Command(ctx, exe, attackArg, string(planJSON))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "the attacker could not run: %s", stderr.String())
	var res attackResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "attacker output: %s", stdout.String())
	return res
}

// escapeBrowser starts a provider for site with a recording log and
// returns one of its browsers. The launcher's environment holds
// envCanary=canary from before the browser starts.
func escapeBrowser(t *testing.T, site *testsite.Site, canary string) (*Browser, *recordingHandler) {
	t.Helper()
	t.Setenv(envCanary, canary)
	rec := &recordingHandler{}
	p := newProvider(t, site, func(c *Config) { c.Log = slog.New(rec) })
	return openBrowser(t, p), rec
}

// TestEscapeThroughDevTools is the hostile agent: with the trial's DevTools
// it tries to read host files and the browser's environment through file:
// URLs, to open the browser's privileged pages, to download into a host
// directory or anywhere the browser itself may write (its sandbox's /tmp,
// its profile), and to reach this host's loopback and private addresses.
func TestEscapeThroughDevTools(t *testing.T) {
	site := testsite.New(t)
	canary := "canary-" + rand.Text()
	b, rec := escapeBrowser(t, site, canary)
	listener := newCanaryListener(t)

	// Both are open to every user: only the confinement keeps the browser out.
	hostDir := sandboxtest.TempDir(t)
	secretFile := filepath.Join(hostDir, "secret.txt")
	require.NoError(t, os.WriteFile(secretFile, []byte("file-"+canary), 0o644))
	downloads := sandboxtest.TempDir(t)
	require.NoError(t, os.Chmod(downloads, 0o777)) // any uid could write here

	lp := strconv.Itoa(listener.port())
	loopbackURLs := []string{
		"http://127.0.0.1:" + lp + "/nav", "http://localhost:" + lp + "/nav", "http://[::1]:" + lp + "/nav",
		"http://0.0.0.0:" + lp + "/nav", "http://0x7f000001:" + lp + "/nav", "http://2130706433:" + lp + "/nav",
		"http://127.1:" + lp + "/nav", "http://[::ffff:7f00:1]:" + lp + "/nav", "http://017700000001:" + lp + "/nav",
	}
	privateURLs := map[string]string{ // URL -> the host the refusal names
		"http://intranet.test/":                    "intranet.test", // resolves to 10.0.0.5
		"http://metadata.test/latest/meta-data/":   "metadata.test", // resolves to 169.254.169.254
		"http://rebind.test:" + lp + "/nav":        "rebind.test",   // resolves to 127.0.0.1
		"http://10.0.0.1/":                         "10.0.0.1",
		"http://172.16.0.1/":                       "172.16.0.1",
		"http://192.168.1.1/":                      "192.168.1.1",
		"http://100.64.0.1/":                       "100.64.0.1",
		"http://169.254.169.254/latest/meta-data/": "169.254.169.254",
		"http://[fd00:ec2::254]/":                  "fd00:ec2::254",
		"http://[fe80::1]/":                        "fe80::1",
	}
	privileged := []string{
		"chrome://version", "chrome://settings", "chrome://downloads", "chrome-untrusted://terminal/",
		"devtools://devtools/bundled/inspector.html", "view-source:http://books.test/",
		"file:///",
	}
	fileURLs := []string{
		"file://" + secretFile, "file:///etc/shadow", "file:///etc/passwd",
		"file:///proc/self/environ", fmt.Sprintf("file:///proc/%d/environ", browserHostPid(b)),
		"view-source:file://" + secretFile, "view-source:file:///proc/self/environ",
		fmt.Sprintf("view-source:file:///proc/%d/environ", browserHostPid(b)),
	}
	plan := attackPlan{
		Navigate:   slices.Concat(fileURLs, privileged, loopbackURLs, slices.Sorted(maps.Keys(privateURLs))),
		NewTargets: []string{"file://" + secretFile, "chrome://version"},
		Origin:     "file:///",
		Resources: []string{"file://" + secretFile, "file:///proc/self/environ",
			fmt.Sprintf("file:///proc/%d/environ", browserHostPid(b))},
		DownloadURL: "http://books.test/download",
		// A host directory, and the browser's own writable places.
		DownloadDirs: []string{downloads, sandbox.HomeDir, path.Join(sandbox.HomeDir, profileDir), path.Join(sandbox.HomeDir, "dl")},
	}
	res := attack(t, b, plan)
	require.Len(t, res.Pages, len(plan.Navigate)+len(plan.NewTargets)+len(plan.Resources))

	for _, p := range res.Pages {
		t.Logf("%s: error %q, text %.120q", p.URL, p.Error, p.Text)
		assert.NotContains(t, p.Text, canary, "%s leaked the canary", p.URL)
		assert.NotContains(t, p.Text, "root:", "%s leaked an account file", p.URL)
		assert.NotContains(t, p.Text, "PATH=", "%s leaked an environment", p.URL)
	}
	for _, p := range res.Pages {
		if slices.Contains(privileged, p.URL) || slices.Contains(fileURLs, p.URL) || strings.HasPrefix(p.URL, "file:") || strings.HasPrefix(p.URL, "chrome:") {
			// Refused: the navigation failed, or the tab shows Chromium's
			// error page instead of the URL.
			refused := p.Error != "" || strings.HasPrefix(p.Text, "chrome-error://")
			assert.True(t, refused, "%s was not refused; the page read: %.200q", p.URL, p.Text)
		}
	}
	entries, err := os.ReadDir(downloads)
	require.NoError(t, err)
	assert.Empty(t, entries, "the download reached the host directory (%s)", res.Downloads)
	require.Len(t, res.Downloads, len(plan.DownloadDirs))
	for _, d := range res.Downloads {
		assert.True(t, strings.HasSuffix(d, "download canceled"), "a download was not refused: %s", d)
	}
	assert.Empty(t, plantedFilesLeft(t, b), "a download was saved in the browser's sandbox (%s)", res.Downloads)

	assert.Empty(t, listener.connections(), "the browser reached this host's loopback")
	for u, host := range privateURLs {
		assert.True(t, slices.ContainsFunc(rec.lines(), func(l string) bool {
			return strings.Contains(l, "denied") && strings.Contains(l, "host="+host)
		}), "%s was not refused by the browser's egress policy", u)
		assert.True(t, slices.ContainsFunc(keptRefusals(b), func(r runner.Refusal) bool { return r.Host == host }),
			"%s's refusal is not in the trial's record", u)
	}
	assert.Empty(t, hostTCPListeners(t, b), "the browser listens on a TCP port of the host's network: any local process can dial it")
}

// TestEscapeFromHostilePage is the hostile page, with no agent at all: the
// trial's start page tries fetch, XHR, an image, an iframe and a WebSocket
// to a loopback listener in every spelling, and to the DevTools port.
func TestEscapeFromHostilePage(t *testing.T) {
	site := testsite.New(t)
	b, _ := escapeBrowser(t, site, "canary-"+rand.Text())
	listener := newCanaryListener(t)
	ctx, cancel := context.WithTimeout(t.Context(), testsite.Patience)
	defer cancel()

	// The page is heavy: each loopback spelling is a site of its own, so
	// its iframes start several renderers (site isolation) before the page
	// is parsed.
	_, err := b.Load(ctx, fmt.Sprintf("http://books.test/hostile?port=%d&devtools=%d", listener.port(), DevToolsPort))
	require.NoError(t, err)
	var counts struct{ Tried, Settled int }
	tab := startTab(ctx, t, b)
	require.Eventually(t, func() bool {
		text := tab.eval(ctx, "({tried: window.tried || 0, settled: window.settled || 0})")
		return json.Unmarshal([]byte(text), &counts) == nil && counts.Tried > 0 && counts.Settled == counts.Tried/7*testsite.HostileSettles
	}, testsite.Patience, 50*time.Millisecond, "every request of the hostile page met its end (%+v)", &counts)
	time.Sleep(time.Second) // the beacons, whose end a page never sees, had their chance too
	assert.Empty(t, listener.connections(), "the page reached this host's loopback (%d attempts)", counts.Tried)
}

// hostTCPListeners returns the TCP sockets in the host's network namespace
// (this test's) that the browser's processes listen on.
func hostTCPListeners(t *testing.T, b *Browser) []string {
	t.Helper()
	inodes := map[string]bool{}
	for _, pid := range browserPids(t, b) {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if inode, ok := strings.CutPrefix(link, "socket:["); ok && err == nil {
				inodes[strings.TrimSuffix(inode, "]")] = true
			}
		}
	}
	var out []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 9 && f[3] == "0A" && inodes[f[9]] { // 0A: LISTEN
				out = append(out, table+" "+f[1])
			}
		}
	}
	return out
}

// TestBrowserIsConfined inspects the browser's processes from the host:
// none runs as the host's root, none holds the launcher's environment, each
// is in a mount, PID and network namespace of its own with nothing of the
// host's file system but /usr, a few /etc files and its profile, under a
// seccomp filter, without capabilities; and the renderers run inside
// Chromium's own sandbox (its seccomp filter on top of the sandbox's).
func TestBrowserIsConfined(t *testing.T) {
	site := testsite.New(t)
	canary := "canary-" + rand.Text()
	b, _ := escapeBrowser(t, site, canary)
	ctx, cancel := context.WithTimeout(t.Context(), testsite.Patience)
	defer cancel()
	_, err := b.Load(ctx, "http://books.test/") // a page brings a renderer
	require.NoError(t, err)

	self := namespacesOf(t, os.Getpid())
	pids := browserPids(t, b)
	require.Greater(t, len(pids), 3)
	// pids[0] is the sandbox's launcher (bubblewrap on the host side);
	// pids[1], its PID 1, is in the sandbox's namespaces: every process
	// from there on must be confined.
	sandboxUser := namespacesOf(t, pids[1])["user"]
	renderers := 0
	for _, pid := range pids[1:] {
		status := statusOf(t, pid)
		cmdline := procFile(t, pid, "cmdline")
		what := fmt.Sprintf("pid %d (%.60s)", pid, strings.ReplaceAll(cmdline, "\x00", " "))
		for _, id := range strings.Fields(status["Uid"]) {
			assert.NotEqual(t, "0", id, "%s runs as the host's root", what)
		}
		ns := namespacesOf(t, pid)
		// Chromium's zygote holds capabilities, in a user namespace of its
		// own below the sandbox's, where they reach nothing of the host.
		if ns["user"] == sandboxUser {
			assert.Equal(t, "0000000000000000", status["CapEff"], "%s holds capabilities", what)
		}
		assert.Equal(t, "1", status["NoNewPrivs"], "%s may gain privileges", what)
		assert.Equal(t, "2", status["Seccomp"], "%s runs without a seccomp filter", what)

		// Chromium writes its process titles over the environment block of
		// its helpers: environNames tells the title from variables.
		// The sandbox's own PID 1 and init are undumpable: only root reads
		// their environment (empty: the sandbox's own tests).
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if !os.IsPermission(err) || strings.HasPrefix(status["Name"], "chrom") {
			require.NoError(t, err)
			assert.NotContains(t, string(environ), canary, "%s holds the launcher's environment", what)
			for _, name := range environNames(environ, []byte(cmdline)) {
				if _, initOnly := sandbox.InitOnlyEnv()[name]; initOnly && pid == pids[1] {
					continue // the init's own, removed for everything it starts
				}
				assert.Contains(t, browserEnv, name, "%s has %s in its environment", what, name)
			}
		}

		for _, kind := range []string{"mnt", "pid", "net"} {
			assert.NotEqual(t, self[kind], ns[kind], "%s shares the host's %s namespace", what, kind)
		}
		if strings.Contains(cmdline, "--type=renderer") {
			renderers++
			filters, _ := strconv.Atoi(status["Seccomp_filters"])
			assert.GreaterOrEqual(t, filters, 2, "%s: Chromium's own seccomp sandbox is not on top of the sandbox's", what)
		}
	}
	assert.Positive(t, renderers, "a renderer was found")

	root := fmt.Sprintf("/proc/%d/root", chromiumMain(t, b))
	top, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, e := range top {
		assert.Contains(t, browserTop, e.Name(), "the browser sees the host's /%s", e.Name())
	}
	etc, err := os.ReadDir(filepath.Join(root, "etc"))
	require.NoError(t, err)
	for _, e := range etc {
		assert.Contains(t, browserEtc, e.Name(), "the browser sees the host's /etc/%s", e.Name())
	}
	// /var holds the font cache alone.
	for dir, allowed := range map[string]string{"var": "cache", "var/cache": "fontconfig"} {
		entries, _ := os.ReadDir(filepath.Join(root, dir))
		for _, e := range entries {
			assert.Equal(t, allowed, e.Name(), "the browser sees the host's /%s/%s", dir, e.Name())
		}
	}
}

// unprivilegedUID is the launcher TestEscapeAsUnprivilegedLauncher runs the
// suite as: the host's nobody.
const unprivilegedUID = 65534

// TestEscapeAsUnprivilegedLauncher runs the browser's adversarial suite and
// its self-check again with an unprivileged launcher (nobody) when the
// tests run as root, so both launchers are covered by one go test run (CI
// runs as root).
func TestEscapeAsUnprivilegedLauncher(t *testing.T) {
	realstack.Need(t, realstack.Bubblewrap, realstack.Chromium)
	if os.Geteuid() != 0 {
		t.Skip("the tests run unprivileged already: the escape tests above are that run")
	}
	bin := sharedTestBinary(t)
	dir := filepath.Dir(bin)
	wd, err := os.Getwd()
	require.NoError(t, err)

	// The suite is every test the pattern names in this binary, listed the
	// same way, so a test added to it is counted without editing a number.
	const suite = "^(TestEscapeThroughDevTools|TestEscapeFromHostilePage|TestEscapeDevToolsPastThePagePolicy|TestEscapeAroundTheGuardThroughABrowserContext|TestDevToolsGuard[A-Za-z]+|TestBrowserIsConfined|TestCheckPassesForAConfinedBrowser)$"
	list, err := exec.CommandContext(t.Context(), bin, "-test.list", suite).Output()
	require.NoError(t, err)
	want := strings.Fields(string(list))
	require.GreaterOrEqual(t, len(want), 10, "the suite lists %q", want)

	ctx, cancel := context.WithTimeout(t.Context(), 25*testsite.Patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run", suite, "-test.count=1", "-test.v")
	cmd.Dir = wd
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=/tmp", "LANG=C.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: unprivilegedUID, Gid: unprivilegedUID}}
	out, err := cmd.CombinedOutput()
	for _, name := range want {
		if err != nil || !regexp.MustCompile(`(?m)^--- PASS: `+name+` `).Match(out) {
			t.Fatalf("the suite failed as uid %d (%v; %s did not pass):\n%s", unprivilegedUID, err, name, tail(out, 8000))
		}
	}
}

// sharedTestBinary copies this test binary where every user may run it
// (go test's own directory is only its user's): the raw CDP client a
// sandbox runs, and the unprivileged launcher.
func sharedTestBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	data, err := os.ReadFile(exe)
	require.NoError(t, err)
	bin := filepath.Join(sandboxtest.TempDir(t), "local.test")
	require.NoError(t, os.WriteFile(bin, data, 0o755))
	return bin
}

// tail returns the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
