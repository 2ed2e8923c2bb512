package local

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pairbench/pairbench/internal/heldir"
	"github.com/pairbench/pairbench/sandbox"
)

// The DevTools guard stands between the trial's agent and Chromium's
// DevTools server. The agent's sandbox reaches the guard's unix socket
// (Browser.DevTools); the guard alone dials the socket the browser's
// sandbox exposes. It speaks enough HTTP and WebSocket to read every
// command the agent sends, and it forwards each one re-encoded from what it
// parsed, so Chromium sees exactly the command the guard judged: no
// escape, duplicate key, fragmentation or compression can make the two
// read one message differently. What it re-encodes is what it judges: the
// top level (id, method, sessionId) of every command, and the params of
// the few commands whose params it reads (refusedParams, downloadMethods);
// every other command's params, which it does not judge, go on as they
// were sent, never decoded or copied, so a message costs the guard its own
// size and no more.
//
// What it refuses:
//   - every HTTP request but the discovery pages (/json/version, /json,
//     /json/list, /json/protocol) and the WebSocket upgrade to /devtools/...
//     (so no /json/new?URL, no DevTools front end);
//   - WebSocket extensions (the upgrade is made without them, so no frame is
//     compressed), binary messages (Chromium would read them as CBOR),
//     unmasked or malformed frames, messages over maxCDPMessage;
//   - commands in refusedMethods, and commands giving a parameter of
//     refusedParams, answered with a CDP error carrying the command's id
//     and sessionId and never forwarded;
//   - messages that are not one JSON object with an integer id and a
//     string method, or that name a top-level key twice: the connection is
//     closed.
//
// The download commands (downloadMethods) are not refused but forwarded as
// "deny": Playwright sets the download behaviour of every browser context it
// connects to and gives up on the connection when that fails, and a deny
// keeps downloads as the browser's policy has them, refused.

// refusedMethods are the commands no agent may send: each loads code or
// files into the browser, or carries or opens a DevTools channel the guard
// does not read.
var refusedMethods = map[string]string{
	"Extensions.loadUnpacked":       "it installs an extension from a path",
	"PWA.install":                   "it installs a web app",
	"PWA.launchFilesInApp":          "it opens files by path",
	"Target.exposeDevToolsProtocol": "it hands a page a DevTools channel the guard does not see",
	"Target.sendMessageToTarget":    "it carries a command inside a string (use flat sessions)",
	"Target.setRemoteLocations":     "it makes the browser dial DevTools targets of its own",
	"Tethering.bind":                "it opens a port in the browser",
}

// refusedParams are the parameters no agent may give a command, by
// command and parameter, with why.
var refusedParams = map[string]map[string]string{
	// A browser context's own proxy replaces the browser's, the egress:
	// its tabs would reach the browser's own loopback, where Chromium's
	// DevTools server listens, and a page there on DevTools' origin opens
	// a DevTools connection the guard never sees.
	"Target.createBrowserContext": {
		"proxyServer":     "a browser context's own proxy would go around the browser's egress",
		"proxyBypassList": "a browser context's own proxy bypass would go around the browser's egress",
	},
}

// downloadMethods set a download behaviour; the guard forwards them as
// "deny".
var downloadMethods = []string{"Browser.setDownloadBehavior", "Page.setDownloadBehavior"}

// devToolsPages are the DevTools HTTP pages a CDP client reads to find the
// browser's WebSocket (Playwright asks for /json/version/).
var devToolsPages = []string{"/json/version", "/json", "/json/list", "/json/protocol"}

const (
	// maxCDPMessage bounds one command, as the guard holds it whole before
	// judging it. Playwright's largest are its injected scripts, about a
	// megabyte.
	maxCDPMessage = 64 << 20
	// maxGuardConns bounds the WebSocket connections open at once, and so
	// the memory a hostile agent makes the guard hold.
	maxGuardConns = 8
	// guardSocket is the guard's socket in its directory.
	guardSocket = "devtools.sock"
)

// devToolsGuard serves the agent's DevTools socket.
type devToolsGuard struct {
	dir      string   // the socket's directory, the launcher's alone
	hold     *os.File // holds dir (package heldir) until close
	upstream string   // the browser sandbox's exposed DevTools socket
	log      *slog.Logger
	refusals *sandbox.RefusalLog // which of log's refusal lines are written
	srv      *http.Server
	proxy    *httputil.ReverseProxy
	slots    chan struct{} // one per open WebSocket connection

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // hijacked connections, both ends
	closed bool
	wg     sync.WaitGroup
}

// startGuard listens on a socket in a fresh directory under tempDir that
// only the launcher may enter, and relays to upstream.
func startGuard(tempDir, upstream string, log *slog.Logger) (*devToolsGuard, error) {
	dir, hold, err := heldir.Make(tempDir, guardDirPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("devtools guard: %w", err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, guardSocket))
	if err != nil {
		os.RemoveAll(dir)
		hold.Close()
		return nil, fmt.Errorf("devtools guard: %w", err)
	}
	g := &devToolsGuard{
		dir: dir, hold: hold, upstream: upstream, log: log,
		refusals: sandbox.NewRefusalLog(log, "devtools guard"),
		slots:    make(chan struct{}, maxGuardConns),
		conns:    make(map[net.Conn]struct{}),
	}
	g.proxy = &httputil.ReverseProxy{
		// The page asked for, by its canonical name, as nothing but a
		// plain request: no query, no upgrade.
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL = &url.URL{Scheme: "http", Host: "devtools", Path: strings.TrimSuffix(r.In.URL.Path, "/")}
			r.Out.Host = r.In.Host // DevTools names its WebSocket after the client's Host
			r.Out.Header.Del("Upgrade")
			r.Out.Header.Del("Connection")
		},
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode == http.StatusSwitchingProtocols {
				return errors.New("the browser switched protocols on a discovery page")
			}
			return nil
		},
		Transport: &http.Transport{
			DialContext:       func(ctx context.Context, _, _ string) (net.Conn, error) { return sandbox.DialUnix(ctx, upstream) },
			DisableKeepAlives: true,
		},
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	g.srv = &http.Server{
		Handler:           g,
		ReadHeaderTimeout: time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	g.wg.Go(func() { g.srv.Serve(l) })
	return g, nil
}

// socket is the path the agent's sandbox is relayed to.
func (g *devToolsGuard) socket() string { return filepath.Join(g.dir, guardSocket) }

// close ends every connection and removes the socket's directory.
func (g *devToolsGuard) close() error {
	g.srv.Close()
	g.mu.Lock()
	g.closed = true
	for c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
	g.refusals.Flush()
	err := os.RemoveAll(g.dir)
	g.hold.Close()
	return err
}

// guardDirPrefix names the guards' socket directories.
const guardDirPrefix = "pairbench-devtools-"

// CleanStale removes the DevTools guards' socket directories under root
// that no live runner holds: those a killed runner left.
func CleanStale(root string, cutoff time.Time) ([]string, error) {
	return heldir.Clean(root, cutoff, nil, guardDirPrefix+"*")
}

// track registers c so close ends it; it reports false once close began.
func (g *devToolsGuard) track(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.conns[c] = struct{}{}
	return true
}

func (g *devToolsGuard) untrack(c net.Conn) {
	c.Close()
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
}

func (g *devToolsGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	upgrade, upgrading := r.Header["Upgrade"]
	switch {
	case upgrading && len(upgrade) == 1 && strings.EqualFold(upgrade[0], "websocket"):
		g.webSocket(w, r)
	case !upgrading && r.Method == http.MethodGet && slices.Contains(devToolsPages, strings.TrimSuffix(r.URL.Path, "/")):
		g.proxy.ServeHTTP(w, r)
	default:
		g.logRefusal(slog.LevelWarn, "devtools guard: refused an HTTP request", "method", r.Method, "path", r.URL.Path)
		http.Error(w, "refused by pairbench: only the DevTools discovery pages and its WebSocket are served", http.StatusForbidden)
	}
}

// webSocket makes the upgrade with Chromium (without extensions), hands its
// answer to the client and then relays: the client's commands through
// relayCommands, Chromium's messages as they are.
func (g *devToolsGuard) webSocket(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/devtools/") || r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
		http.Error(w, "refused by pairbench: a DevTools WebSocket is a GET of /devtools/... without a body", http.StatusForbidden)
		return
	}
	select {
	case g.slots <- struct{}{}:
		defer func() { <-g.slots }()
	default:
		http.Error(w, fmt.Sprintf("refused by pairbench: at most %d DevTools connections at once", maxGuardConns), http.StatusServiceUnavailable)
		return
	}
	up, err := sandbox.DialUnix(r.Context(), g.upstream)
	if err != nil {
		http.Error(w, "the browser's DevTools is not reachable", http.StatusBadGateway)
		return
	}
	if !g.track(up) {
		up.Close()
		return
	}
	defer g.untrack(up)

	// The upgrade as Chromium gets it: the client's request line and the
	// headers a WebSocket handshake needs, nothing else.
	req := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: r.URL.Path, RawQuery: r.URL.RawQuery},
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Host: r.Host, Header: http.Header{}}
	for _, h := range []string{"Upgrade", "Connection", "Sec-WebSocket-Key", "Sec-WebSocket-Version", "Sec-WebSocket-Protocol", "Origin", "User-Agent"} {
		if v := r.Header.Values(h); len(v) > 0 {
			req.Header[http.CanonicalHeaderKey(h)] = v
		}
	}
	upR := bufio.NewReader(up)
	if err := req.Write(up); err != nil {
		http.Error(w, "the browser's DevTools is not reachable", http.StatusBadGateway)
		return
	}
	resp, err := http.ReadResponse(upR, req)
	if err != nil {
		http.Error(w, "the browser's DevTools did not answer the upgrade", http.StatusBadGateway)
		return
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, io.LimitReader(resp.Body, 1<<20))
		return
	}
	if resp.Header.Get("Sec-WebSocket-Extensions") != "" {
		http.Error(w, "the browser's DevTools chose a WebSocket extension", http.StatusBadGateway)
		return
	}
	client, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if !g.track(client) {
		client.Close()
		return
	}
	defer g.untrack(client)
	client.SetDeadline(time.Time{})
	if err := resp.Write(client); err != nil {
		return
	}

	out := &frameWriter{w: client}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Chromium's messages go to the client as they come, whole frames
		// at a time, so a refusal is never written into one.
		err := copyFrames(out, upR)
		g.logEnd("browser", err)
		client.Close()
	}()
	err = g.relayCommands(buf.Reader, &frameWriter{w: up, mask: true}, out)
	g.logEnd("agent", err)
	up.Close()
	<-done
}

func (g *devToolsGuard) logEnd(side string, err error) {
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		g.logRefusal(slog.LevelWarn, "devtools guard: connection ended", "side", side, "err", err)
	}
}

// logRefusal logs a refusal, or an end the agent provoked, at level: the
// agent can make them as fast as the guard answers, each quoting what it
// chose (a sessionId of up to 64 MiB), so every value is clipped as the
// egress clips its own (sandbox.ClipForLog) and the lines are rate-limited
// as the egress's are (sandbox.RefusalLog: the first 100, then a count
// every 10 s).
func (g *devToolsGuard) logRefusal(level slog.Level, msg string, args ...any) {
	if !g.refusals.Count() {
		return
	}
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = sandbox.ClipForLog(v)
		case error:
			args[i] = sandbox.ClipForLog(v.Error())
		}
	}
	g.log.Log(context.Background(), level, msg, args...)
}

// WebSocket opcodes (RFC 6455, section 5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

// errProtocol ends a connection whose client broke the WebSocket protocol
// or the guard's rules.
type errProtocol struct {
	code   uint16 // the close code sent to the client
	reason string
}

func (e *errProtocol) Error() string { return e.reason }

// frameHeader is one frame's header.
type frameHeader struct {
	fin    bool
	rsv    byte
	op     byte
	masked bool
	mask   [4]byte
	length uint64
}

// readHeader reads a frame's header.
func readHeader(r *bufio.Reader) (frameHeader, error) {
	var h frameHeader
	var b [8]byte
	if _, err := io.ReadFull(r, b[:2]); err != nil {
		return h, err
	}
	h.fin, h.rsv, h.op = b[0]&0x80 != 0, b[0]&0x70, b[0]&0x0f
	h.masked = b[1]&0x80 != 0
	switch n := b[1] & 0x7f; n {
	case 126:
		if _, err := io.ReadFull(r, b[:2]); err != nil {
			return h, err
		}
		h.length = uint64(binary.BigEndian.Uint16(b[:2]))
	case 127:
		if _, err := io.ReadFull(r, b[:8]); err != nil {
			return h, err
		}
		h.length = binary.BigEndian.Uint64(b[:8])
	default:
		h.length = uint64(n)
	}
	if h.masked {
		if _, err := io.ReadFull(r, h.mask[:]); err != nil {
			return h, err
		}
	}
	return h, nil
}

// relayCommands reads the client's frames, judges each whole message and
// forwards it (or answers it, through reply) until the client closes or
// breaks a rule; then it sends the client a close frame saying why.
func (g *devToolsGuard) relayCommands(r *bufio.Reader, up, reply *frameWriter) error {
	err := g.commands(r, up, reply)
	var perr *errProtocol
	if errors.As(err, &perr) {
		g.logRefusal(slog.LevelWarn, "devtools guard: closed an agent's connection", "reason", perr.reason)
		payload := binary.BigEndian.AppendUint16(nil, perr.code)
		payload = append(payload, truncate(perr.reason, 120)...)
		reply.write(opClose, payload)
		up.write(opClose, binary.BigEndian.AppendUint16(nil, 1000))
	}
	return err
}

func (g *devToolsGuard) commands(r *bufio.Reader, up, reply *frameWriter) error {
	var msg []byte
	inMessage := false
	for {
		h, err := readHeader(r)
		if err != nil {
			return err
		}
		switch {
		case h.rsv != 0:
			return &errProtocol{1002, "a frame with reserved bits set (no extension was agreed)"}
		case !h.masked:
			return &errProtocol{1002, "an unmasked frame from the client"}
		case h.op >= opClose && (!h.fin || h.length > 125):
			return &errProtocol{1002, "a fragmented or oversized control frame"}
		case h.op > opPong || (h.op > opBinary && h.op < opClose):
			return &errProtocol{1002, fmt.Sprintf("unknown opcode %#x", h.op)}
		case h.op == opBinary:
			return &errProtocol{1003, "a binary message (DevTools commands are JSON text)"}
		case h.op == opText && inMessage:
			return &errProtocol{1002, "a new message inside a fragmented one"}
		case h.op == opContinuation && !inMessage:
			return &errProtocol{1002, "a continuation outside a message"}
		case h.op < opClose && h.length > maxCDPMessage-uint64(len(msg)): // len(msg) <= maxCDPMessage: no wrap
			return &errProtocol{1009, fmt.Sprintf("a message over %d bytes", maxCDPMessage)}
		}
		if h.op >= opClose {
			// A control frame may come between a message's fragments.
			payload, err := readPayload(r, h, nil)
			if err != nil {
				return err
			}
			if h.op == opClose {
				up.write(opClose, payload)
				return io.EOF
			}
			if err := up.write(h.op, payload); err != nil {
				return err
			}
			continue
		}
		if msg, err = readPayload(r, h, msg); err != nil {
			return err
		}
		inMessage = !h.fin
		if inMessage {
			continue
		}
		if err := g.command(msg, up, reply); err != nil {
			return err
		}
		msg = msg[:0]
	}
}

// readPayload appends h's unmasked payload to dst.
func readPayload(r *bufio.Reader, h frameHeader, dst []byte) ([]byte, error) {
	start := len(dst)
	dst = slices.Grow(dst, int(h.length))[:start+int(h.length)]
	if _, err := io.ReadFull(r, dst[start:]); err != nil {
		return nil, err
	}
	for i := range dst[start:] {
		dst[start+i] ^= h.mask[i%4]
	}
	return dst, nil
}

// cdpCommand is a command as the guard read it.
type cdpCommand struct {
	ID        int64
	Method    string
	SessionID string
	// Params is the params object as the agent sent it (a part of its
	// message, not a copy), or nil.
	Params json.RawMessage
}

// maxJudgedParams bounds the params of the commands whose params the guard
// reads (refusedParams, downloadMethods): a few hundred bytes each in use.
const maxJudgedParams = 64 << 10

// command judges one message and forwards, rewrites or refuses it.
func (g *devToolsGuard) command(msg []byte, up, reply *frameWriter) error {
	if !utf8.Valid(msg) {
		return &errProtocol{1007, "a text message that is not UTF-8"}
	}
	cmd, err := parseCommand(msg)
	if err != nil {
		return &errProtocol{1008, "not a DevTools command: " + err.Error()}
	}
	if why, ok := refusedMethods[cmd.Method]; ok {
		g.logRefusal(slog.LevelWarn, "devtools guard: refused a command", "method", cmd.Method, "session", cmd.SessionID)
		return g.refuse(reply, cmd, why)
	}
	refused, judged := refusedParams[cmd.Method]
	download := slices.Contains(downloadMethods, cmd.Method)
	if judged || download {
		// The guard reads these params, so Chromium gets them re-encoded
		// from what it read: each key once, spelled plainly.
		if len(cmd.Params) > maxJudgedParams {
			return g.refuse(reply, cmd, fmt.Sprintf("its params are over %d bytes", maxJudgedParams))
		}
		var p map[string]json.RawMessage
		json.Unmarshal(cmd.Params, &p) // an object, or nil (parseCommand)
		for _, k := range slices.Sorted(maps.Keys(p)) {
			if why, ok := refused[k]; ok { // given as null too
				g.logRefusal(slog.LevelWarn, "devtools guard: refused a command's parameter", "method", cmd.Method, "session", cmd.SessionID, "param", k)
				return g.refuse(reply, cmd, why)
			}
		}
		if download {
			g.logRefusal(slog.LevelInfo, "devtools guard: a download behaviour set to deny", "method", cmd.Method, "session", cmd.SessionID)
			p = denyDownloads(p)
		}
		if p != nil {
			if cmd.Params, err = encodeJSON(p); err != nil {
				return err
			}
		}
	}
	parts, err := cmd.wire()
	if err != nil {
		return err
	}
	return up.write(opText, parts...)
}

// wire returns the command as the guard forwards it, in the parts of one
// message: its id, method and sessionId encoded from what the guard read,
// then its params as they are.
func (c cdpCommand) wire() ([][]byte, error) {
	head, err := encodeJSON(struct {
		ID        int64  `json:"id"`
		Method    string `json:"method"`
		SessionID string `json:"sessionId,omitempty"`
	}{c.ID, c.Method, c.SessionID})
	if err != nil || c.Params == nil {
		return [][]byte{head}, err
	}
	return [][]byte{head[:len(head)-1], []byte(`,"params":`), c.Params, []byte("}")}, nil
}

// refuse answers cmd with a CDP error.
func (g *devToolsGuard) refuse(reply *frameWriter, cmd cdpCommand, why string) error {
	text, err := encodeJSON(struct {
		ID    int64 `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		SessionID string `json:"sessionId,omitempty"`
	}{ID: cmd.ID, SessionID: cmd.SessionID, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{-32000, cmd.Method + " refused by pairbench: " + why}})
	if err != nil {
		return err
	}
	return reply.write(opText, text)
}

// denyDownloads keeps a download command's browser context and events
// switch and sets its behaviour to deny.
func denyDownloads(params map[string]json.RawMessage) map[string]json.RawMessage {
	deny := map[string]json.RawMessage{"behavior": json.RawMessage(`"deny"`)}
	for _, k := range []string{"browserContextId", "eventsEnabled"} {
		if v, ok := params[k]; ok {
			deny[k] = v
		}
	}
	return deny
}

// parseCommand reads msg as one JSON object holding an integer id, a
// string method, an optional string sessionId and optional object params.
// A key named twice at the top level, or anything after the object, is an
// error. It reads the top level itself, so the params, whatever their
// size, are neither decoded nor copied: decoding them into Go values costs
// tens of times the message.
func parseCommand(msg []byte) (cdpCommand, error) {
	var cmd cdpCommand
	if !json.Valid(msg) { // one JSON value, nothing after it
		return cmd, errors.New("not one JSON value")
	}
	i := skipSpace(msg, 0)
	if msg[i] != '{' {
		return cmd, errors.New("not a JSON object")
	}
	seen := map[string]bool{}
	for i = skipSpace(msg, i+1); msg[i] != '}'; i = skipSpace(msg, i) {
		if msg[i] == ',' {
			i = skipSpace(msg, i+1)
		}
		end := valueEnd(msg, i)
		var key string
		json.Unmarshal(msg[i:end], &key)          // a valid string
		i = skipSpace(msg, skipSpace(msg, end)+1) // past the colon
		end = valueEnd(msg, i)
		value := msg[i:end]
		i = end
		if seen[key] {
			return cmd, fmt.Errorf("key %q given twice", key)
		}
		seen[key] = true
		var err error
		switch key {
		case "id":
			if cmd.ID, err = strconv.ParseInt(string(value), 10, 64); err != nil {
				return cmd, fmt.Errorf("id %.40s is not an integer", value)
			}
		case "method":
			if err := json.Unmarshal(value, &cmd.Method); err != nil {
				return cmd, fmt.Errorf("method: %w", err)
			}
		case "sessionId":
			if err := json.Unmarshal(value, &cmd.SessionID); err != nil {
				return cmd, fmt.Errorf("sessionId: %w", err)
			}
		case "params":
			switch value[0] {
			case 'n': // null: as good as none
			case '{':
				cmd.Params = value
			default:
				return cmd, errors.New("params is not an object")
			}
		}
		// Chromium reads no other key.
	}
	if !seen["id"] || !seen["method"] {
		return cmd, errors.New("no id or no method")
	}
	return cmd, nil
}

// skipSpace returns the index of the first byte from i on that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the end of the JSON value that starts at b[i], in b
// that json.Valid accepted.
func valueEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
			continue
		case '}', ']':
			depth--
		default:
			if depth == 0 { // a number, true, false or null
				for i < len(b) && !strings.ContainsRune(",}] \t\n\r", rune(b[i])) {
					i++
				}
				return i
			}
			continue
		}
		if depth == 0 {
			return i + 1
		}
	}
	return i
}

// encodeJSON encodes v without escaping HTML characters and without the
// encoder's trailing newline.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// frameWriter writes whole frames to one end, one writer at a time.
type frameWriter struct {
	mu   sync.Mutex
	w    io.Writer
	mask bool // frames to Chromium are masked, as a client's must be
}

// write writes one unfragmented frame whose payload is the parts joined.
func (f *frameWriter) write(op byte, parts ...[]byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writeLocked(op, true, parts)
}

func (f *frameWriter) writeLocked(op byte, fin bool, parts [][]byte) error {
	var h []byte
	b0 := op
	if fin {
		b0 |= 0x80
	}
	h = append(h, b0)
	var maskBit byte
	if f.mask {
		maskBit = 0x80
	}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	switch {
	case n < 126:
		h = append(h, maskBit|byte(n))
	case n <= 0xffff:
		h = append(h, maskBit|126)
		h = binary.BigEndian.AppendUint16(h, uint16(n))
	default:
		h = append(h, maskBit|127)
		h = binary.BigEndian.AppendUint64(h, uint64(n))
	}
	if f.mask {
		// The mask protects intermediaries that do not exist here; a zero
		// key is a valid one and leaves the payload as it is.
		h = append(h, 0, 0, 0, 0)
	}
	frame := net.Buffers(append([][]byte{h}, parts...)) // one writev on a connection
	_, err := frame.WriteTo(f.w)
	return err
}

// copyFrames copies Chromium's frames to out as they are, a fragmented
// message whole before anything else is written.
func copyFrames(out *frameWriter, r *bufio.Reader) error {
	inMessage := false
	for {
		h, err := readHeader(r)
		if err != nil {
			return err
		}
		if h.masked || h.rsv != 0 {
			return errors.New("the browser sent a masked or extended frame")
		}
		if !inMessage {
			out.mu.Lock()
		}
		if h.op < opClose {
			inMessage = !h.fin
		}
		err = out.copyLocked(h, r)
		if !inMessage {
			out.mu.Unlock()
		}
		if err != nil {
			if inMessage {
				out.mu.Unlock()
			}
			return err
		}
		if h.op == opClose {
			return io.EOF
		}
	}
}

// copyLocked writes h and its payload, read from r, to f.
func (f *frameWriter) copyLocked(h frameHeader, r io.Reader) error {
	var b []byte
	b0 := h.op
	if h.fin {
		b0 |= 0x80
	}
	b = append(b, b0)
	switch n := h.length; {
	case n < 126:
		b = append(b, byte(n))
	case n <= 0xffff:
		b = append(b, 126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, n)
	}
	if _, err := f.w.Write(b); err != nil {
		return err
	}
	_, err := io.CopyN(f.w, r, int64(h.length))
	return err
}

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
