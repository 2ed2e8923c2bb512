package local

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/internal/cdpconn"
	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// The attacks a researcher tries once the page policy holds: DevTools
// commands that change what the page's policy rests on (a browser context
// with a proxy of its own, request interception, the file chooser,
// extensions, DevTools' own remote target discovery) and the ways out a page has that are not HTTP
// (WebRTC's STUN and TURN, WebTransport's QUIC) or not a navigation
// (prefetch, prerender). The CDP client is the test itself on the
// browser's DevTools socket, the endpoint the agent's relay reaches
// (TestEscapeThroughDevTools drives the same socket from inside an agent's
// sandbox). Every destination is a listener of this test's loopback.

// udpCanary counts datagrams reaching a UDP port of this test's loopback.
type udpCanary struct {
	port  int
	grams atomic.Int64
}

func newUDPCanary(t *testing.T, network, addr string) *udpCanary {
	t.Helper()
	pc, err := net.ListenPacket(network, addr)
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	c := &udpCanary{port: pc.LocalAddr().(*net.UDPAddr).Port}
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			c.grams.Add(1)
		}
	}()
	return c
}

// devToolsConn is a raw CDP connection to b's DevTools server; events go
// to the returned channel (dropped when it is full).
func devToolsConn(t *testing.T, b *Browser) (*cdpconn.Conn, <-chan *cdproto.Message) {
	t.Helper()
	events := make(chan *cdproto.Message, 256)
	tr, err := remote.DialContext(t.Context(), devToolsOnLoopback(t, b))
	require.NoError(t, err)
	c := cdpconn.New(tr, func(m *cdproto.Message) {
		select {
		case events <- m:
		default:
		}
	})
	t.Cleanup(c.Close)
	return c, events
}

// cdpTab is a tab the attacker opened and attached to.
type cdpTab struct {
	c       *cdpconn.Conn
	session target.SessionID
	blank   bool // opened on about:blank
}

// openTab opens a tab on u, in browser context bc when given, and
// attaches to it.
func openTab(ctx context.Context, t *testing.T, c *cdpconn.Conn, u, bc string) *cdpTab {
	t.Helper()
	params := map[string]any{"url": u}
	if bc != "" {
		params["browserContextId"] = bc
	}
	var created struct {
		TargetID string `json:"targetId"`
	}
	require.NoError(t, c.Call(ctx, "", "Target.createTarget", params, &created))
	t.Cleanup(func() {
		c.Call(context.WithoutCancel(ctx), "", "Target.closeTarget", map[string]any{"targetId": created.TargetID}, nil)
	})
	var attached struct {
		SessionID target.SessionID `json:"sessionId"`
	}
	require.NoError(t, c.Call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached))
	return &cdpTab{c: c, session: attached.SessionID, blank: u == "about:blank"}
}

// startTab attaches a raw CDP connection to b's start tab, the only page
// the browser shows before anyone opens another, to read what its page
// holds.
func startTab(ctx context.Context, t *testing.T, b *Browser) *cdpTab {
	t.Helper()
	c, _ := devToolsConn(t, b)
	var targets struct {
		Infos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
		} `json:"targetInfos"`
	}
	require.NoError(t, c.Call(ctx, "", "Target.getTargets", map[string]any{}, &targets))
	var pages []string
	for _, ti := range targets.Infos {
		if ti.Type == "page" {
			pages = append(pages, ti.TargetID)
		}
	}
	require.Len(t, pages, 1, "the start tab alone")
	var attached struct {
		SessionID target.SessionID `json:"sessionId"`
	}
	require.NoError(t, c.Call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": pages[0], "flatten": true}, &attached))
	return &cdpTab{c: c, session: attached.SessionID}
}

// eval evaluates js in the tab (awaiting a promise) and returns its value
// as JSON text, or the exception.
func (tb *cdpTab) eval(ctx context.Context, js string) string {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := tb.c.Call(ctx, tb.session, "Runtime.evaluate", map[string]any{"expression": js, "awaitPromise": true, "returnByValue": true}, &r); err != nil {
		return "error: " + err.Error()
	}
	if r.Exception != nil {
		return "exception: " + r.Exception.Text
	}
	return string(r.Result.Value)
}

// settledText waits (up to testsite.Patience) for the tab's document to load and
// returns its URL and text. A tab opened on a URL starts on about:blank:
// that is not it.
func (tb *cdpTab) settledText(ctx context.Context) string {
	for end := time.Now().Add(testsite.Patience); time.Now().Before(end) && ctx.Err() == nil; time.Sleep(50 * time.Millisecond) {
		if tb.eval(ctx, `document.readyState === "complete" && (location.href !== "about:blank" || `+strconv.FormatBool(tb.blank)+`)`) == "true" {
			break
		}
	}
	return tb.eval(ctx, `location.href + "\n" + (document.documentElement ? document.documentElement.innerText : "")`)
}

// TestEscapeDevToolsPastThePagePolicy is the hostile agent going around
// the page policy and the egress with DevTools commands, and the hostile
// page using the ways out that are not HTTP requests.
func TestEscapeDevToolsPastThePagePolicy(t *testing.T) {
	site := testsite.New(t)
	canary := "canary-" + rand.Text()
	b, _ := escapeBrowser(t, site, canary)
	tcp := newCanaryListener(t)
	udp4 := newUDPCanary(t, "udp4", "127.0.0.1:0")
	udp6 := newUDPCanary(t, "udp6", "[::1]:0")
	secretFile := filepath.Join(sandboxtest.TempDir(t), "secret.txt")
	require.NoError(t, os.WriteFile(secretFile, []byte("file-"+canary), 0o644))
	c, events := devToolsConn(t, b)
	ctx, cancel := context.WithTimeout(t.Context(), 4*testsite.Patience)
	defer cancel()
	lp := strconv.Itoa(tcp.port())
	loopback := "http://127.0.0.1:" + lp

	// Positive control: the attacker's tabs load the site.
	home := openTab(ctx, t, c, "http://books.test/", "")
	require.Contains(t, home.settledText(ctx), "http://books.test/", "the attacker's own tab loads the site")

	t.Run("a browser context with the attacker's proxy", func(t *testing.T) {
		for _, proxy := range []string{"direct://", "socks5://127.0.0.1:" + lp} {
			var bc struct {
				ID string `json:"browserContextId"`
			}
			err := c.Call(ctx, "", "Target.createBrowserContext", map[string]any{"proxyServer": proxy, "proxyBypassList": "<-loopback>"}, &bc)
			if err != nil {
				t.Logf("proxy %s: createBrowserContext refused: %v", proxy, err)
				continue
			}
			for _, u := range []string{loopback + "/context", "http://[::1]:" + lp + "/context", "file://" + secretFile} {
				text := openTab(ctx, t, c, u, bc.ID).settledText(ctx)
				t.Logf("proxy %s, %s: %.160q", proxy, u, text)
				assert.NotContains(t, text, canary, "%s through %s", u, proxy)
				assert.NotContains(t, text, "root:", "%s through %s", u, proxy)
			}
		}
	})

	t.Run("request interception", func(t *testing.T) {
		// Every request of a tab on the site paused, then sent on to the
		// loopback listener instead (Fetch.continueRequest with a new
		// URL), or answered with a redirect there (Fetch.fulfillRequest).
		tab := openTab(ctx, t, c, "about:blank", "")
		require.NoError(t, c.Call(ctx, tab.session, "Fetch.enable", map[string]any{"patterns": []map[string]any{{"urlPattern": "*"}}}, nil))
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case m := <-events:
					if m.Method != "Fetch.requestPaused" || m.SessionID != tab.session {
						continue
					}
					var ev struct {
						RequestID string `json:"requestId"`
						Request   struct {
							URL string `json:"url"`
						} `json:"request"`
					}
					json.Unmarshal(m.Params, &ev)
					switch {
					case strings.HasSuffix(ev.Request.URL, "/continue"):
						c.Call(ctx, tab.session, "Fetch.continueRequest", map[string]any{"requestId": ev.RequestID, "url": loopback + "/continued"}, nil)
					case strings.HasSuffix(ev.Request.URL, "/file"):
						c.Call(ctx, tab.session, "Fetch.continueRequest", map[string]any{"requestId": ev.RequestID, "url": "file://" + secretFile}, nil)
					case strings.HasSuffix(ev.Request.URL, "/redirect"):
						c.Call(ctx, tab.session, "Fetch.fulfillRequest", map[string]any{"requestId": ev.RequestID, "responseCode": 302,
							"responseHeaders": []map[string]string{{"name": "Location", "value": loopback + "/redirected"}}}, nil)
					default:
						c.Call(ctx, tab.session, "Fetch.continueRequest", map[string]any{"requestId": ev.RequestID}, nil)
					}
				case <-stop:
					return
				case <-ctx.Done():
					return
				}
			}
		}()
		for _, u := range []string{"http://books.test/continue", "http://books.test/file", "http://books.test/redirect"} {
			c.Call(ctx, tab.session, "Page.navigate", map[string]any{"url": u}, nil)
			text := tab.settledText(ctx)
			t.Logf("%s: %.160q", u, text)
			assert.NotContains(t, text, canary, u)
		}
		close(stop)
		<-done
		c.Call(ctx, tab.session, "Fetch.disable", nil, nil)
		assert.True(t, slices.ContainsFunc(keptRefusals(b), func(r runner.Refusal) bool { return r.Host == "127.0.0.1" }),
			"the rewritten and redirected requests met the egress's refusal")
	})

	t.Run("the file chooser", func(t *testing.T) {
		// DOM.setFileInputFiles hands a page files by path; what the page
		// reads is what the browser's own sandbox holds, never the host's.
		tab := openTab(ctx, t, c, "http://books.test/", "")
		tab.settledText(ctx)
		tab.eval(ctx, `document.body.insertAdjacentHTML("beforeend", '<input type=file id=pick multiple>')`)
		var doc struct {
			Root struct {
				NodeID int64 `json:"nodeId"`
			} `json:"root"`
		}
		require.NoError(t, c.Call(ctx, tab.session, "DOM.getDocument", nil, &doc))
		var q struct {
			NodeID int64 `json:"nodeId"`
		}
		require.NoError(t, c.Call(ctx, tab.session, "DOM.querySelector", map[string]any{"nodeId": doc.Root.NodeID, "selector": "#pick"}, &q))
		files := []string{secretFile, "/etc/shadow", "/etc/passwd", "/proc/1/environ", fmt.Sprintf("/proc/%d/environ", browserHostPid(b))}
		err := c.Call(ctx, tab.session, "DOM.setFileInputFiles", map[string]any{"nodeId": q.NodeID, "files": files}, nil)
		t.Logf("setFileInputFiles: %v", err)
		read := tab.eval(ctx, `Promise.all([...document.getElementById("pick").files].map((f) =>
			f.text().then((s) => f.name + ": " + s, (e) => f.name + ": " + e)))`)
		t.Logf("the page read: %.400s", read)
		assert.NotContains(t, read, canary, "a host file reached the page")
		assert.NotContains(t, read, "root:", "an account file reached the page")
		assert.NotContains(t, read, envCanary, "the launcher's environment reached the page")
	})

	t.Run("DevTools' own connections", func(t *testing.T) {
		// Remote target discovery (chrome://inspect's network targets)
		// dials host:port with a socket of its own, not through the proxy;
		// Cast discovery multicasts.
		err := c.Call(ctx, "", "Target.setRemoteLocations", map[string]any{"locations": []map[string]any{
			{"host": "127.0.0.1", "port": tcp.port()}, {"host": "localhost", "port": tcp.port()}, {"host": "::1", "port": tcp.port()}}}, nil)
		t.Logf("Target.setRemoteLocations: %v", err)
		t.Logf("Target.setDiscoverTargets: %v", c.Call(ctx, "", "Target.setDiscoverTargets", map[string]any{"discover": true}, nil))
		tab := openTab(ctx, t, c, "about:blank", "")
		t.Logf("Cast.enable: %v", c.Call(ctx, tab.session, "Cast.enable", nil, nil))
		time.Sleep(2 * time.Second)
		c.Call(ctx, "", "Target.setDiscoverTargets", map[string]any{"discover": false}, nil)
	})

	t.Run("an unpacked extension", func(t *testing.T) {
		var loaded struct {
			ID string `json:"id"`
		}
		err := c.Call(ctx, "", "Extensions.loadUnpacked", map[string]any{"path": "/tmp"}, &loaded)
		assert.Error(t, err, "an extension was loaded (%s)", loaded.ID)
	})

	t.Run("ways out that are not HTTP requests", func(t *testing.T) {
		tab := openTab(ctx, t, c, "http://books.test/", "")
		tab.settledText(ctx)
		u4, u6 := strconv.Itoa(udp4.port), strconv.Itoa(udp6.port)
		js := `(async () => {
			const out = [];
			const ice = [{urls: ["stun:127.0.0.1:` + u4 + `", "stun:[::1]:` + u6 + `"]},
				{urls: ["turn:127.0.0.1:` + u4 + `?transport=udp", "turn:127.0.0.1:` + lp + `?transport=tcp"], username: "u", credential: "p"}];
			for (const policy of ["all", "relay"]) {
				const pc = new RTCPeerConnection({iceServers: ice, iceTransportPolicy: policy});
				pc.createDataChannel("x");
				pc.onicecandidate = (e) => e.candidate && out.push(policy + " candidate " + e.candidate.candidate);
				await pc.setLocalDescription(await pc.createOffer());
			}
			for (const u of ["https://127.0.0.1:` + u4 + `/wt", "https://[::1]:` + u6 + `/wt", "https://localhost:` + u4 + `/wt"]) {
				try { const wt = new WebTransport(u); wt.ready.catch(() => {}); wt.closed.catch(() => {}); } catch (e) { out.push("WebTransport " + e); }
			}
			document.head.insertAdjacentHTML("beforeend",
				'<link rel=prefetch href="` + loopback + `/prefetch"><link rel=preconnect href="` + loopback + `"><link rel=dns-prefetch href="//127.0.0.1:` + lp + `">');
			const rules = document.createElement("script");
			rules.type = "speculationrules";
			rules.textContent = JSON.stringify({prerender: [{source: "list", urls: ["` + loopback + `/prerender"]}], prefetch: [{source: "list", urls: ["` + loopback + `/specprefetch"]}]});
			document.head.append(rules);
			await new Promise((r) => setTimeout(r, 3000));
			return out;
		})()`
		out := tab.eval(ctx, js)
		t.Logf("the page: %.600s", out)
		require.True(t, strings.HasPrefix(out, "["), "the page's script ran: %s", out)
		assert.Zero(t, udp4.grams.Load(), "a datagram reached this host's 127.0.0.1")
		assert.Zero(t, udp6.grams.Load(), "a datagram reached this host's [::1]")
	})

	time.Sleep(time.Second) // a late connection has had its chance
	assert.Empty(t, tcp.connections(), "the browser reached this host's loopback")
}

// TestDevToolsSocketRefusesOtherHostUsers: the DevTools socket on the
// host is the launcher's to relay, and nobody else's: a host user other
// than the launcher, such as another trial's sandbox user (a uid of
// sandbox.DefaultUIDs) or nobody, cannot connect to it, while the
// launcher can.
func TestDevToolsSocketRefusesOtherHostUsers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("acting as other host users needs root; as an unprivileged launcher the browser's directory is the launcher's alone (mode 0700, sandbox tests)")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is not installed (scripts/setup.sh installs it)")
	}
	site := testsite.New(t)
	b, _ := escapeBrowser(t, site, "canary-"+rand.Text())
	ask := func(uid int) (string, error) {
		cmd := exec.CommandContext(t.Context(), "curl", "-sS", "--max-time", "5", "--unix-socket", b.DevTools().Socket, "http://127.0.0.1/json/version")
		if uid != 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := ask(0)
	require.NoError(t, err, out)
	require.Contains(t, out, "webSocketDebuggerUrl", "the launcher reaches DevTools")
	for _, uid := range []int{int(sandbox.DefaultUIDs.First + sandbox.DefaultUIDs.Count - 1), unprivilegedUID} {
		out, err := ask(uid)
		assert.Error(t, err, "uid %d reached DevTools: %s", uid, out)
		t.Logf("uid %d: %s", uid, strings.TrimSpace(out))
		assert.NotContains(t, out, "webSocketDebuggerUrl", "uid %d", uid)
	}
}
