package remote

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DevToolsPort is the port of the agent's own loopback that its sandbox
// relays to a remote browser's DevTools relay.
const DevToolsPort = 9222

// devToolsURL is the agent's CDP endpoint: a browser-level websocket URL
// on DevToolsPort, whatever the remote browser's own URL is.
var devToolsURL = "ws://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(DevToolsPort)) + "/devtools/browser/remote"

// relay serves a unix socket on this host and forwards each websocket
// opened on it to one remote browser's CDP URL, whatever path the client
// asked for. It is the only way an agent reaches the browser.
type relay struct {
	dir, socket string
	srv         *http.Server
	done        chan struct{}
}

// startRelay listens on a fresh socket under tempDir and relays to target.
func startRelay(tempDir, target string, log *slog.Logger) (*relay, error) {
	to, err := url.Parse(target)
	if err != nil {
		return nil, errors.New("the CDP URL does not parse") // never quote it: it may hold a token
	}
	switch to.Scheme {
	case "ws":
		to.Scheme = "http"
	case "wss":
		to.Scheme = "https"
	default:
		return nil, fmt.Errorf("the CDP URL's scheme is %q, want ws or wss", to.Scheme)
	}
	dir, err := os.MkdirTemp(tempDir, "pairbench-remote-")
	if err != nil {
		return nil, fmt.Errorf("devtools relay: %w", err)
	}
	r := &relay{dir: dir, socket: filepath.Join(dir, "devtools.sock"), done: make(chan struct{})}
	l, err := net.Listen("unix", r.socket)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("devtools relay: %w", err)
	}
	upstream := *to
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := upstream
			pr.Out.URL = &u
			pr.Out.Host = ""
			// The agent's own Origin (or its absence) is not the service's
			// business; Chromium refuses unknown origins.
			pr.Out.Header.Del("Origin")
		},
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
			log.Warn("devtools relay: the remote browser did not answer", "err", redact(err, target, to.String()))
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	r.srv = &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(r.done)
		r.srv.Serve(l)
	}()
	return r, nil
}

// close stops the relay, ends its connections and removes its socket.
func (r *relay) close() {
	r.srv.Close() // hijacked websockets end when their upstream does
	<-r.done
	os.RemoveAll(r.dir)
}

// redact is err's text without the browser's URL (it may carry a token)
// in either of its forms.
func redact(err error, urls ...string) string {
	msg := err.Error()
	for _, u := range urls {
		if u != "" {
			msg = strings.ReplaceAll(msg, u, "<browser URL>")
		}
	}
	return msg
}
