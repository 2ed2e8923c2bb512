package launch

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/internal/heldir"
	"github.com/pairbench/pairbench/runner"
)

// The caps are hard: every model request of an agent passes a gate on the
// host, between the agent's sandbox and its model, which stops the agent
// before the turn that would exceed a cap, so that turn never reaches the
// model and is never paid for. The agent's own stream still reads each
// turn's cost and ends the run on a cap (a turn dearer than every turn
// before it can still pass the spend cap: its cost is known only once it
// is answered).

// Meter is what an agent's stream tells its model gate: each model turn as
// it ends, with the run's cost so far. Streams call Turn; the gate reads it.
type Meter struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced at every Turn
	turns   int
	cost    float64
	dearest float64 // the dearest single turn so far
}

// NewMeter returns a meter with no turn.
func NewMeter() *Meter { return &Meter{changed: make(chan struct{})} }

// Turn records that a model turn ended, the run having cost total so far.
// A nil Meter records nothing.
func (m *Meter) Turn(total float64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.turns++
	m.dearest = max(m.dearest, total-m.cost)
	m.cost = max(m.cost, total)
	close(m.changed)
	m.changed = make(chan struct{})
}

// read returns the turns and cost recorded, the dearest turn, and a channel
// closed at the next Turn.
func (m *Meter) read() (turns int, cost, dearest float64, next <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.turns, m.cost, m.dearest, m.changed
}

// catchUp bounds how long the gate waits for the stream to report the turns
// already answered before it decides on the next: the stream reads the
// agent's output a moment after the agent wrote it.
const catchUp = 3 * time.Second

// gate admits an agent's model requests while its caps allow another turn.
type gate struct {
	caps  runner.Caps
	meter *Meter
	// stop is called with the cap that refused a request: it kills the
	// agent.
	stop func(pairbench.Cap)

	mu       sync.Mutex
	answered int // model requests answered with a 2xx: turns taken
	inFlight int
}

// errCapped is the error a refused model request gets; the agent is being
// stopped by then.
var errCapped = errors.New("pairbench: the agent's cap is reached; this model request is not sent")

// modelCall reports whether r is a model turn: any POST but a token count.
func modelCall(r *http.Request) bool {
	return r.Method == http.MethodPost && !strings.Contains(r.URL.Path, "count_tokens")
}

// admit decides on one model request: refused (the agent stopped) when
// another turn would take more turns than the cap, or when the cost so far
// and a turn as dear as the dearest so far would pass the spend cap.
func (g *gate) admit(ctx context.Context) error {
	g.mu.Lock()
	if g.caps.Turns > 0 && g.answered+g.inFlight >= g.caps.Turns {
		g.mu.Unlock()
		g.stop(pairbench.CapTurns)
		return errCapped
	}
	g.inFlight++ // held from here: a request at once beside it counts it
	answered := g.answered
	g.mu.Unlock()
	if g.caps.SpendUSD > 0 {
		turns, cost, dearest, next := g.meter.read()
		deadline := time.NewTimer(catchUp)
		defer deadline.Stop()
	wait:
		for turns < answered {
			select {
			case <-next:
			case <-deadline.C:
				break wait // decide on what is known
			case <-ctx.Done():
				g.done(0)
				return ctx.Err()
			}
			turns, cost, dearest, next = g.meter.read()
		}
		if cost+dearest > g.caps.SpendUSD {
			g.done(0)
			g.stop(pairbench.CapSpend)
			return errCapped
		}
	}
	return nil
}

// done records the end of an admitted request; one answered with a 2xx was
// a turn.
func (g *gate) done(status int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight--
	if status >= 200 && status < 300 {
		g.answered++
	}
}

// wrap returns rt behind the gate: every model call is admitted first.
func (g *gate) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if !modelCall(r) {
			return rt.RoundTrip(r)
		}
		if err := g.admit(r.Context()); err != nil {
			return nil, err
		}
		resp, err := rt.RoundTrip(r)
		status := 0
		if err == nil {
			status = resp.StatusCode
		}
		g.done(status)
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// forHost returns rt with the gate in front of the requests to host (a
// remote model's), for the egress proxy's upstream.
func (g *gate) forHost(host string, rt http.RoundTripper) http.RoundTripper {
	gated := g.wrap(rt)
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Hostname() == host {
			return gated.RoundTrip(r)
		}
		return rt.RoundTrip(r)
	})
}

// gatePrefix names the directories holding a model gate's socket.
const gatePrefix = "pairbench-gate-"

// serveGate serves the gate in front of the model on this host's loopback
// port, on a unix socket in a fresh directory under tempRoot (held while
// it serves, so CleanStale can tell it from a killed runner's), and
// returns the socket's path and a stop that removes it.
func serveGate(tempRoot string, port int, g *gate) (string, func(), error) {
	dir, hold, err := heldir.Make(orTemp(tempRoot), gatePrefix)
	if err != nil {
		return "", nil, err
	}
	sock := filepath.Join(dir, "model.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		hold.Close()
		os.RemoveAll(dir)
		return "", nil, err
	}
	target := &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
		},
		Transport:     g.wrap(http.DefaultTransport),
		FlushInterval: -1, // stream: flush after every write (SSE)
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, err.Error(), http.StatusBadGateway)
		},
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 30 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	return sock, func() {
		srv.Close()
		<-done
		hold.Close()
		os.RemoveAll(dir)
	}, nil
}

// CleanStale removes the model gate directories under root (os.TempDir()
// when "") that no live runner holds.
func CleanStale(root string, cutoff time.Time) ([]string, error) {
	return heldir.Clean(orTemp(root), cutoff, nil, gatePrefix+"*")
}

func orTemp(dir string) string {
	if dir == "" {
		return os.TempDir()
	}
	return dir
}
