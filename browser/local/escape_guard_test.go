package local

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/sandbox"
)

// The hostile agent against the DevTools guard itself: a WebSocket client
// written by hand on the socket the agent's sandbox is relayed to, which
// dresses the command that would let downloads through (and the commands
// that load code) in every way the protocols allow, then asks for a
// download. Nothing may be saved anywhere in the browser's sandbox.

// rawWS is a hand-made WebSocket client connection.
type rawWS struct {
	t      *testing.T
	c      net.Conn
	r      *bufio.Reader
	header http.Header // the upgrade's answer
	events []cdpMessage
}

// cdpMessage is a message from the browser, as the client reads it.
type cdpMessage struct {
	ID        int64           `json:"id"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     *struct{ Message string }
	SessionID string `json:"sessionId"`
}

// dialRawWS connects to b's DevTools socket and upgrades to the browser's
// WebSocket with the given extra header lines; early is written in the
// same write as the request, before any answer.
func dialRawWS(t *testing.T, b *Browser, extra string, early []byte) *rawWS {
	t.Helper()
	path, err := b.proc.devToolsAnswers(t.Context())
	require.NoError(t, err)
	c, err := sandbox.DialUnix(t.Context(), b.DevTools().Socket)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	key := make([]byte, 16)
	rand.Read(key)
	req := "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:9222\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + base64.StdEncoding.EncodeToString(key) + "\r\nSec-WebSocket-Version: 13\r\n" + extra + "\r\n"
	_, err = c.Write(append([]byte(req), early...))
	require.NoError(t, err)
	ws := &rawWS{t: t, c: c, r: bufio.NewReader(c)}
	resp, err := http.ReadResponse(ws.r, nil)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("the upgrade: %s %s", resp.Status, body)
	}
	ws.header = resp.Header
	return ws
}

// frame is one client frame, masked with a random key.
func frame(fin bool, rsv1 bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	if rsv1 {
		b0 |= 0x40
	}
	out := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		out = append(out, 0x80|byte(n))
	case n <= 0xffff:
		out = append(out, 0x80|126)
		out = binary.BigEndian.AppendUint16(out, uint16(n))
	default:
		out = append(out, 0x80|127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	var mask [4]byte
	rand.Read(mask[:])
	out = append(out, mask[:]...)
	for i, c := range payload {
		out = append(out, c^mask[i%4])
	}
	return out
}

func textFrame(s string) []byte { return frame(true, false, 0x1, []byte(s)) }

func (ws *rawWS) write(frames ...[]byte) error {
	_, err := ws.c.Write(bytes.Join(frames, nil))
	return err
}

// read returns the next message from the browser, or the error (io.EOF or
// a close frame's code and reason) that ended the connection.
func (ws *rawWS) read() (cdpMessage, error) {
	ws.c.SetReadDeadline(time.Now().Add(testsite.Patience))
	var h [2]byte
	if _, err := io.ReadFull(ws.r, h[:]); err != nil {
		return cdpMessage{}, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(ws.r, l[:]); err != nil {
			return cdpMessage{}, err
		}
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		if _, err := io.ReadFull(ws.r, l[:]); err != nil {
			return cdpMessage{}, err
		}
		n = binary.BigEndian.Uint64(l[:])
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(ws.r, payload); err != nil {
		return cdpMessage{}, err
	}
	switch h[0] & 0x0f {
	case 0x8:
		code := 0
		if len(payload) >= 2 {
			code = int(binary.BigEndian.Uint16(payload))
			payload = payload[2:]
		}
		return cdpMessage{}, fmt.Errorf("closed %d: %s", code, payload)
	case 0x9, 0xa:
		return ws.read()
	}
	var m cdpMessage
	require.NoError(ws.t, json.Unmarshal(payload, &m), "%s", payload)
	return m, nil
}

// call sends a command as one text frame and waits for its answer.
func (ws *rawWS) call(id int64, session, method string, params any) (cdpMessage, error) {
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	text, _ := json.Marshal(msg)
	if err := ws.write(textFrame(string(text))); err != nil {
		return cdpMessage{}, err
	}
	return ws.await(id)
}

// await reads until the answer to id, keeping the events.
func (ws *rawWS) await(id int64) (cdpMessage, error) {
	for {
		m, err := ws.read()
		if err != nil {
			return m, err
		}
		if m.Method != "" {
			ws.events = append(ws.events, m)
			continue
		}
		if m.ID == id {
			return m, nil
		}
	}
}

// download opens a tab (in browser context bc when given), navigates it to
// the site's download and returns how the browser's download events say it
// ended, or how the connection did.
func (ws *rawWS) download(bc, tag string) string {
	params := map[string]any{"url": "about:blank"}
	if bc != "" {
		params["browserContextId"] = bc
	}
	created, err := ws.call(9001, "", "Target.createTarget", params)
	if err != nil {
		return "connection: " + err.Error()
	}
	var target struct{ TargetID string }
	json.Unmarshal(created.Result, &target)
	attached, err := ws.call(9002, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	if err != nil {
		return "connection: " + err.Error()
	}
	var session struct{ SessionID string }
	json.Unmarshal(attached.Result, &session)
	if _, err := ws.call(9003, session.SessionID, "Page.navigate", map[string]any{"url": "http://books.test/download?" + tag}); err != nil {
		return "connection: " + err.Error()
	}
	// The download's end, as the browser reports it to the client that
	// asked for its events: saved, or refused.
	for i, end := 0, time.Now().Add(testsite.Patience); time.Now().Before(end); i++ {
		for _, e := range ws.events {
			if e.Method != "Browser.downloadProgress" {
				continue
			}
			var p struct{ State string }
			json.Unmarshal(e.Params, &p)
			if p.State != "inProgress" {
				return "download " + p.State
			}
		}
		ws.events = nil
		time.Sleep(50 * time.Millisecond)
		if _, err := ws.call(int64(9100+i), "", "Target.getTargets", nil); err != nil {
			return "connection: " + err.Error()
		}
	}
	return "no download ended"
}

// TestDevToolsGuardRefusesDownloadsInEveryDress sends the command that
// allows downloads into the browser's own sandbox as a client would (the
// way Playwright sends it on connecting) and dressed every way the JSON and
// WebSocket protocols allow, each time followed by a download: every
// download must end refused (or the guard closes the connection), and no
// file may appear anywhere in the browser's per-browser directory.
func TestDevToolsGuardRefusesDownloadsInEveryDress(t *testing.T) {
	site := testsite.New(t)
	b, _ := escapeBrowser(t, site, "canary-"+rand.Text())

	allow := func(id int, dir string) string {
		return fmt.Sprintf(`{"id":%d,"method":"Browser.setDownloadBehavior","params":{"behavior":"allowAndName","downloadPath":%q,"eventsEnabled":true}}`, id, "/tmp/"+dir)
	}
	deflate := func(s string) []byte {
		var b bytes.Buffer
		w, _ := flate.NewWriter(&b, flate.BestSpeed)
		io.WriteString(w, s)
		w.Flush()
		return bytes.TrimSuffix(b.Bytes(), []byte{0, 0, 0xff, 0xff})
	}
	type dress struct {
		name  string
		want  string // how the download, or the connection, ends
		extra string // upgrade header lines
		early bool   // the command goes with the upgrade request
		send  func(ws *rawWS) error
	}
	dresses := []dress{
		{name: "plain", want: "download canceled", send: func(ws *rawWS) error { return ws.write(textFrame(allow(1, "plain"))) }},
		{name: "escaped", want: "download canceled", send: func(ws *rawWS) error {
			return ws.write(textFrame(strings.Replace(allow(1, "escaped"), "setDownloadBehavior", `setDownload\u0042ehavior`, 1)))
		}},
		{name: "duplicate-method", want: "connection: closed 1008", send: func(ws *rawWS) error {
			return ws.write(textFrame(strings.Replace(allow(1, "duplicate"), `"method"`, `"method":"Target.getTargets","method"`, 1)))
		}},
		{name: "fragmented", want: "download canceled", send: func(ws *rawWS) error {
			m := []byte(allow(1, "fragmented"))
			return ws.write(frame(false, false, 0x1, m[:10]), frame(true, false, 0x9, []byte("ping")),
				frame(false, false, 0x0, m[10:30]), frame(true, false, 0x0, m[30:]))
		}},
		{name: "binary", want: "connection: closed 1003", send: func(ws *rawWS) error { return ws.write(frame(true, false, 0x2, []byte(allow(1, "binary")))) }},
		{name: "compressed", want: "connection: closed 1002", extra: "Sec-WebSocket-Extensions: permessage-deflate\r\n", send: func(ws *rawWS) error {
			return ws.write(frame(true, true, 0x1, deflate(allow(1, "compressed"))))
		}},
		{name: "before-the-upgrade", want: "download canceled", early: true},
		{name: "oversize", want: "connection: closed 1009", send: func(ws *rawWS) error {
			// A header announcing a terabyte, and no payload: the guard
			// refuses it without waiting for it.
			return ws.write([]byte{0x81, 0x80 | 127, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2, 3, 4})
		}},
		{name: "batch", want: "connection: closed 1008", send: func(ws *rawWS) error { return ws.write(textFrame("[" + allow(1, "batch") + "]")) }},
		{name: "trailing", want: "connection: closed 1008", send: func(ws *rawWS) error {
			return ws.write(textFrame(`{"id":1,"method":"Target.getTargets"}` + allow(2, "trailing")))
		}},
	}
	var outcomes []string
	for _, d := range dresses {
		var early []byte
		if d.early {
			early = textFrame(allow(1, "early"))
		}
		ws := dialRawWS(t, b, d.extra, early)
		if d.send != nil {
			require.NoError(t, d.send(ws), d.name)
		}
		var outcome string
		if _, err := ws.await(1); err != nil {
			outcome = "connection: " + err.Error()
		} else {
			outcome = ws.download("", d.name)
		}
		t.Logf("%s: %s", d.name, outcome)
		outcomes = append(outcomes, d.name+": "+outcome)
		assert.True(t, strings.HasPrefix(outcome, d.want), "%s: want %s, got %s", d.name, d.want, outcome)
	}

	// A browser context of the attacker's own, and a page's own command.
	ws := dialRawWS(t, b, "", nil)
	created, err := ws.call(1, "", "Target.createBrowserContext", map[string]any{})
	require.NoError(t, err)
	var bc struct{ BrowserContextID string }
	require.NoError(t, json.Unmarshal(created.Result, &bc))
	_, err = ws.call(2, "", "Browser.setDownloadBehavior", map[string]any{"behavior": "allow", "browserContextId": bc.BrowserContextID, "downloadPath": "/tmp/context", "eventsEnabled": true})
	require.NoError(t, err)
	outcome := ws.download(bc.BrowserContextID, "context")
	t.Logf("a new browser context: %s", outcome)
	assert.Equal(t, "download canceled", outcome, "a new browser context")

	assert.Empty(t, plantedFilesLeft(t, b), "downloads saved in the browser's sandbox (%s)", strings.Join(outcomes, "; "))
}

// plantedFilesLeft is plantedFiles once Chromium has cleaned up after the
// refused downloads. A download's first bytes go to a temporary file
// (/tmp/.org.chromium.Chromium.*) before the refusal, and Chromium removes
// it a moment after it reports the download canceled: seconds after on a
// loaded machine (reproduced with the browser's share of one core at a
// fifth, TestEscapeThroughDevTools found the file). A download that was
// saved stays, and the wait ends with it after Patience.
func plantedFilesLeft(t *testing.T, b *Browser) []string {
	t.Helper()
	for deadline := time.Now().Add(testsite.Patience); ; time.Sleep(50 * time.Millisecond) {
		if left := plantedFiles(t, b); len(left) == 0 || time.Now().After(deadline) {
			return left
		}
	}
}

// plantedFiles lists the files that hold the site's download anywhere the
// browser may write: its per-browser directory, and its /tmp as the browser
// sees it, which has the profile's memory file system in it too.
func plantedFiles(t *testing.T, b *Browser) []string {
	t.Helper()
	var saved []string
	for _, dir := range []string{b.proc.sb.Home(), fmt.Sprintf("/proc/%d/root%s", chromiumMain(t, b), sandbox.HomeDir)} {
		require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if data, err := os.ReadFile(p); err == nil && bytes.Contains(data, []byte(testsite.DownloadMark)) {
					saved = append(saved, p)
				}
			}
			return nil
		}))
	}
	return saved
}

// blankTab opens a tab on about:blank (commands 1 and 2) and attaches to it.
func (ws *rawWS) blankTab() (target struct{ TargetID string }, session struct{ SessionID string }) {
	created, err := ws.call(1, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	require.NoError(ws.t, err)
	require.NoError(ws.t, json.Unmarshal(created.Result, &target))
	attached, err := ws.call(2, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	require.NoError(ws.t, err)
	require.NoError(ws.t, json.Unmarshal(attached.Result, &session))
	return target, session
}

// TestDevToolsGuardRefusesCommandsThatLoadCode: the commands that install
// code, or carry or open DevTools channels the guard does not read, are
// answered with an error carrying the command's id and session, and the
// connection goes on.
func TestDevToolsGuardRefusesCommandsThatLoadCode(t *testing.T) {
	site := testsite.New(t)
	b, _ := escapeBrowser(t, site, "canary-"+rand.Text())
	ws := dialRawWS(t, b, "", nil)
	target, session := ws.blankTab()

	for i, c := range []struct {
		session, method string
		params          any
	}{
		{"", "Extensions.loadUnpacked", map[string]any{"path": "/tmp"}},
		{"", "Target.exposeDevToolsProtocol", map[string]any{"targetId": target.TargetID, "bindingName": "cdp"}},
		{session.SessionID, "PWA.install", map[string]any{"manifestId": "http://books.test/"}},
		// A command inside a string, for a session of the old, nested kind.
		{"", "Target.sendMessageToTarget", map[string]any{"targetId": target.TargetID,
			"message": `{"id":1,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"/tmp/nested"}}`}},
	} {
		id := int64(10 + i)
		m, err := ws.call(id, c.session, c.method, c.params)
		require.NoError(t, err, c.method)
		require.NotNil(t, m.Error, "%s was not refused: %s", c.method, m.Result)
		assert.Contains(t, m.Error.Message, "refused by pairbench", c.method)
		assert.Equal(t, c.session, m.SessionID, "%s: the refusal names the command's session", c.method)
	}
	// The page got no DevTools channel of its own.
	m, err := ws.call(20, session.SessionID, "Runtime.evaluate", map[string]any{"expression": "typeof cdp", "returnByValue": true})
	require.NoError(t, err)
	assert.JSONEq(t, `{"result":{"type":"string","value":"undefined"}}`, string(m.Result))
}

// TestDevToolsGuardServesOnlyDiscovery: of DevTools' HTTP pages the guard
// serves the discovery pages alone, one request after another on one
// connection too (pipelined), and never /json/new, which opens a URL.
func TestDevToolsGuardServesOnlyDiscovery(t *testing.T) {
	site := testsite.New(t)
	b, _ := escapeBrowser(t, site, "canary-"+rand.Text())
	c, err := sandbox.DialUnix(t.Context(), b.DevTools().Socket)
	require.NoError(t, err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(testsite.Patience))
	paths := []string{"/json/version/", "/json/new?file:///etc/passwd", "/json/list", "/json/activate/x", "/devtools/inspector.html", "/json/version"}
	var reqs bytes.Buffer
	for _, p := range paths {
		fmt.Fprintf(&reqs, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:9222\r\n\r\n", p)
	}
	fmt.Fprintf(&reqs, "PUT /json/new?about:blank HTTP/1.1\r\nHost: 127.0.0.1:9222\r\nConnection: close\r\n\r\n")
	_, err = c.Write(reqs.Bytes())
	require.NoError(t, err)
	r := bufio.NewReader(c)
	var got []string
	for range len(paths) + 1 {
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got = append(got, fmt.Sprintf("%d %t", resp.StatusCode, bytes.Contains(body, []byte(`"webSocketDebuggerUrl"`))))
	}
	assert.Equal(t, []string{"200 true", "403 false", "200 true", "403 false", "403 false", "200 true", "403 false"}, got)

	// No tab was opened.
	ws := dialRawWS(t, b, "", nil)
	m, err := ws.call(1, "", "Target.getTargets", map[string]any{})
	require.NoError(t, err)
	assert.NotContains(t, string(m.Result), "passwd")
}

// aroundTheGuardJS runs in a page on DevTools' own origin: it opens a
// DevTools WebSocket to the browser target at the path it is given,
// straight to Chromium's server, and through it allows downloads into the
// browser's /tmp and opens the site's download. It returns "no connection"
// when the WebSocket does not open, else what each step answered.
const aroundTheGuardJS = `(async (path) => {
	const ws = new WebSocket("ws://127.0.0.1:` + "9222" + `" + path);
	const opened = await new Promise((res) => { ws.onopen = () => res(true); ws.onerror = ws.onclose = () => res(false); });
	if (!opened) return "no connection";
	let id = 0;
	const call = (method, params) => new Promise((res) => {
		const mine = ++id;
		ws.addEventListener("message", (e) => { const m = JSON.parse(e.data); if (m.id === mine) res(JSON.stringify(m)); });
		ws.send(JSON.stringify({id: mine, method, params}));
	});
	const ended = new Promise((res) => {
		ws.addEventListener("message", (e) => {
			const m = JSON.parse(e.data);
			if (m.method === "Browser.downloadProgress" && m.params.state !== "inProgress") res(m.params.state);
		});
		setTimeout(() => res("no end within a minute"), 60000);
	});
	const out = ["connected"];
	out.push(await call("Browser.setDownloadBehavior", {behavior: "allowAndName", downloadPath: "/tmp", eventsEnabled: true}));
	out.push(await call("Target.createTarget", {url: "http://books.test/download?around-the-guard"}));
	out.push("download " + await ended);
	return out.join("; ");
})`

// TestEscapeAroundTheGuardThroughABrowserContext is the hostile agent
// taking a browser context whose proxy is not the egress
// (Target.createBrowserContext with proxyServer or proxyBypassList): its
// tabs reach the browser's own loopback directly, where Chromium's DevTools
// server listens, so a tab there on DevTools' own origin opens a DevTools
// connection the guard never sees and allows downloads through it. A
// context with a proxy of its own is refused, a plain one (Playwright's)
// still opens and loads the site, and no download is saved anywhere.
func TestEscapeAroundTheGuardThroughABrowserContext(t *testing.T) {
	site := testsite.New(t)
	b, _ := escapeBrowser(t, site, "canary-"+rand.Text())
	c, _ := devToolsConn(t, b)
	ctx, cancel := context.WithTimeout(t.Context(), 4*testsite.Patience)
	defer cancel()
	browserPath, err := b.proc.devToolsAnswers(ctx)
	require.NoError(t, err)
	devtools := "http://127.0.0.1:" + strconv.Itoa(DevToolsPort)
	egress := "http://127.0.0.1:" + strconv.Itoa(sandbox.DefaultProxyPort)

	for _, params := range []map[string]any{
		{"proxyServer": "direct://"},
		{"proxyServer": ""}, // no proxy rules at all: direct
		{"proxyServer": egress, "proxyBypassList": "127.0.0.1:" + strconv.Itoa(DevToolsPort)},
		{"proxyServer": egress, "proxyBypassList": "<local>"},
		{"disposeOnDetach": true, "proxyBypassList": "<-loopback>"},
	} {
		var bc struct {
			ID string `json:"browserContextId"`
		}
		if err := c.Call(ctx, "", "Target.createBrowserContext", params, &bc); err != nil {
			t.Logf("%v: refused: %v", params, err)
			assert.Contains(t, err.Error(), "refused by pairbench", "%v", params)
			continue
		}
		tab := openTab(ctx, t, c, devtools+"/json/version", bc.ID)
		text := tab.settledText(ctx)
		got := tab.eval(ctx, aroundTheGuardJS+"("+strconv.Quote(browserPath)+")")
		t.Logf("%v: the tab read %.80q; the page: %s", params, text, got)
		assert.NotContains(t, text, "webSocketDebuggerUrl", "%v: a tab of the context read DevTools' own pages", params)
		assert.Equal(t, `"no connection"`, got, "%v: a page reached DevTools around the guard", params)
	}

	// The parameter's name spelled with a JSON escape, and named twice.
	ws := dialRawWS(t, b, "", nil)
	for i, params := range []string{`{"proxy\u0053erver":"direct://"}`, `{"proxyServer":null,"proxyServer":"direct://"}`} {
		id := int64(i + 1)
		require.NoError(t, ws.write(textFrame(`{"id":`+strconv.FormatInt(id, 10)+`,"method":"Target.createBrowserContext","params":`+params+`}`)))
		m, err := ws.await(id)
		require.NoError(t, err, params)
		require.NotNil(t, m.Error, "%s: a context was created: %s", params, m.Result)
		assert.Contains(t, m.Error.Message, "refused by pairbench", params)
	}

	// Playwright's own contexts, without a proxy, still open and go
	// through the egress.
	var bc struct {
		ID string `json:"browserContextId"`
	}
	require.NoError(t, c.Call(ctx, "", "Target.createBrowserContext", map[string]any{"disposeOnDetach": true}, &bc))
	text := openTab(ctx, t, c, "http://books.test/", bc.ID).settledText(ctx)
	assert.True(t, strings.HasPrefix(text, `"http://books.test/`), "a plain browser context loads the site: %.120q", text)

	assert.Empty(t, plantedFilesLeft(t, b), "a download was saved in the browser's sandbox")
}

// TestDevToolsGuardForwardsABigCommandAsSent: a command's params reach
// Chromium as the agent sent them, white space and escapes included, and
// a command of several megabytes (as Playwright's uploads make) is answered.
func TestDevToolsGuardForwardsABigCommandAsSent(t *testing.T) {
	site := testsite.New(t)
	b, _ := escapeBrowser(t, site, "canary-"+rand.Text())
	ws := dialRawWS(t, b, "", nil)
	_, session := ws.blankTab()

	big := strings.Repeat("a", 8<<20)
	require.NoError(t, ws.write(textFrame(`{"id":3,"sessionId":"`+session.SessionID+`","method":"Runtime.evaluate",`+
		"\n"+`"params" : { "returnByValue" : true , "expression" : "'`+big+`'.length + '\u0041\t'.length" } }`)))
	m, err := ws.await(3)
	require.NoError(t, err)
	require.Nil(t, m.Error, "the command was refused")
	assert.JSONEq(t, fmt.Sprintf(`{"result":{"type":"number","value":%d,"description":"%d"}}`, len(big)+2, len(big)+2), string(m.Result))
}
