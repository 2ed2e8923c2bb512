//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts"
)

// faultProxy stands between the runners and the real S3 server, so a test
// can hold an upload in flight (to kill its runner during it) or fail
// requests the ways a store fails: 5xx answers, reset connections, slow
// answers.
type faultProxy struct {
	URL string

	mu sync.Mutex
	// decide, when set, picks what happens to a request: nil passes it.
	decide func(r *http.Request) *fault
	// hold, when set, holds the first PUT whose key ends in it, once half
	// its body is read: held gets the key and the request waits until the
	// client goes away.
	hold string
	held chan string
	// stored lists, in order, the key of every PUT the server took (a 2xx
	// answer); injected counts the faults injected, by kind.
	stored   []string
	injected map[string]int
}

// fault is one way to fail a request.
type fault struct {
	Status int           // answer this instead of passing it on
	Reset  bool          // cut the connection without an answer
	Delay  time.Duration // wait this long first
}

func newFaultProxy(t *testing.T, upstream string) *faultProxy {
	t.Helper()
	target, err := url.Parse(upstream)
	require.NoError(t, err)
	p := &faultProxy{held: make(chan string, 1), injected: map[string]int{}}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = pr.In.Host // the signature covers the Host header
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		decide, hold := p.decide, p.hold
		holdIt := r.Method == http.MethodPut && hold != "" && strings.HasSuffix(r.URL.Path, hold)
		if holdIt {
			p.hold = ""
		}
		p.mu.Unlock()
		if holdIt {
			half := make([]byte, max(1, r.ContentLength/2))
			io.ReadFull(r.Body, half)
			p.held <- strings.TrimPrefix(r.URL.Path, "/")
			// The runner is killed mid-upload: reading the rest of the
			// body fails then, or, if it was all sent already, the
			// request's context ends once the connection closes. (The
			// server watches a connection only once its body is read.)
			if _, err := io.Copy(io.Discard, r.Body); err == nil {
				<-r.Context().Done()
			}
			return
		}
		if decide != nil {
			if f := decide(r); f != nil {
				p.mu.Lock()
				p.injected[f.kind()]++
				p.mu.Unlock()
				if f.Delay > 0 {
					select {
					case <-time.After(f.Delay):
					case <-r.Context().Done():
						return
					}
				}
				switch {
				case f.Reset:
					if hj, ok := w.(http.Hijacker); ok {
						if c, _, err := hj.Hijack(); err == nil {
							c.Close()
						}
					}
					return
				case f.Status != 0:
					w.Header().Set("Content-Type", "application/xml")
					w.WriteHeader(f.Status)
					fmt.Fprintf(w, `<?xml version="1.0"?><Error><Code>InternalError</Code><Message>injected %d</Message></Error>`, f.Status)
					return
				}
			}
		}
		sw := &statusWriter{ResponseWriter: w}
		rp.ServeHTTP(sw, r)
		if r.Method == http.MethodPut && sw.status/100 == 2 {
			p.mu.Lock()
			p.stored = append(p.stored, strings.TrimPrefix(r.URL.Path, "/"))
			p.mu.Unlock()
		}
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// kind names a fault for counting.
func (f *fault) kind() string {
	switch {
	case f.Reset:
		return "reset"
	case f.Status != 0:
		return strconv.Itoa(f.Status)
	}
	return "slow"
}

// statusWriter notes the status a response was given.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets the reverse proxy flush through.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// counts returns the faults injected so far, by kind, and the keys stored.
func (p *faultProxy) counts() (map[string]int, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.injected), slices.Clone(p.stored)
}

// set changes how the proxy treats requests from now on.
func (p *faultProxy) set(decide func(*http.Request) *fault) {
	p.mu.Lock()
	p.decide = decide
	p.mu.Unlock()
}

// holdNext holds the next PUT of a key ending in suffix.
func (p *faultProxy) holdNext(suffix string) {
	p.mu.Lock()
	p.hold = suffix
	p.mu.Unlock()
}

// storeBytes reads a key of store, nil when it is not there.
func storeBytes(t *testing.T, store artifacts.Store, key string) []byte {
	t.Helper()
	rc, err := store.Get(t.Context(), key)
	if err != nil {
		return nil
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return b
}

// sameBytes reports whether a local file and a stored object are equal.
func sameBytes(t *testing.T, store artifacts.Store, key, file string) bool {
	t.Helper()
	local, err := os.ReadFile(file)
	return err == nil && bytes.Equal(local, storeBytes(t, store, key))
}

// storeHoldsTheRun checks that store holds exactly the files of the run
// directory dir (its hidden files aside), each with the same bytes, and the
// published report.
func storeHoldsTheRun(t *testing.T, store artifacts.Store, runID, dir string) {
	t.Helper()
	prefix := runID + "/"
	listed, err := store.List(t.Context(), prefix)
	require.NoError(t, err)
	stored := map[string]bool{}
	for _, in := range listed {
		stored[strings.TrimPrefix(in.Key, prefix)] = true
	}
	local := map[string]bool{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		local[filepath.ToSlash(rel)] = true
		assert.True(t, sameBytes(t, store, prefix+filepath.ToSlash(rel), p), "the store's %s is the directory's", rel)
		return nil
	}))
	for rel := range stored {
		assert.True(t, local[rel], "the store holds %s, which the directory does not", rel)
	}
	assert.True(t, stored["report.json"], "the report is published")
}
