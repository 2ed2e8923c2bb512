// Package kerneltest is a fake of Kernel's browsers API for tests, at the
// transport: an HTTP server answering the endpoints pairbench calls (POST
// /browsers, GET and DELETE /browsers/{id}, GET /profiles/{name}) as Kernel
// documents them, whose
// browsers are real, confined local Chromiums (a runner.Browsers the test
// gives, normally browser/local's provider). Each browser's cdp_ws_url
// is a websocket on a second loopback server that checks the browser's
// token and relays to that Chromium's DevTools socket, as Kernel's proxy
// does for its browsers.
//
// Faults are set on the server: slow creates, 429s, failing deletes,
// browsers that expire (gone, as Kernel's inactivity timeout leaves them).
package kerneltest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pairbench/pairbench/browser/browsertest"
	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/runner"
)

// Faults are the misbehaviours the fake shows, each until it is used up.
type Faults struct {
	// CreateDelay is how long each create takes before it answers (the
	// browser is made whether or not the client still waits).
	CreateDelay time.Duration
	// Quota is how many of the next creates answer 429, with RetryAfter
	// as Retry-After (whole seconds; 0 sends none).
	Quota      int
	RetryAfter time.Duration
	// CreateErrors is how many of the next creates answer 500.
	CreateErrors int
	// FailDeletes is how many of the next deletes answer 500 (the browser
	// lives on).
	FailDeletes int
	// ExpireOnCreate is how many of the next creates answer with a browser
	// that has expired already: its websocket refuses every connection.
	ExpireOnCreate int
}

// CreateRequest is a create's body as the fake read it.
type CreateRequest struct {
	Headless       bool `json:"headless"`
	Stealth        bool `json:"stealth"`
	TimeoutSeconds int  `json:"timeout_seconds"`
	Profile        *struct {
		Name        string `json:"name"`
		SaveChanges bool   `json:"save_changes"`
	} `json:"profile"`
}

// Server is the fake API.
type Server struct {
	// URL is the API's base URL and Key the API key it accepts.
	URL, Key string

	browsers runner.Browsers
	api, cdp *httptest.Server
	life     context.Context

	mu       sync.Mutex
	faults   Faults
	profiles map[string]bool
	sessions map[string]*session
	creates  []CreateRequest
	deletes  int
	keysSeen []string // Authorization headers that were not the key
}

type session struct {
	id, token string
	browser   runner.Browser
	expired   bool
}

// New starts a fake API whose browsers browsers opens; every browser left
// is closed at the test's end. profiles are the names of the profiles it
// knows.
func New(t testing.TB, browsers runner.Browsers, profiles ...string) *Server {
	life, cancel := context.WithCancel(context.Background())
	s := &Server{Key: "sk_kernel_test_" + token(), browsers: browsers, life: life,
		profiles: map[string]bool{}, sessions: map[string]*session{}}
	for _, p := range profiles {
		s.profiles[p] = true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /browsers", s.create)
	mux.HandleFunc("GET /browsers/{id}", s.get)
	mux.HandleFunc("DELETE /browsers/{id}", s.delete)
	mux.HandleFunc("GET /profiles/{name}", s.profile)
	s.api = httptest.NewServer(s.auth(mux))
	s.cdp = httptest.NewServer(http.HandlerFunc(s.websocket))
	s.URL = s.api.URL
	t.Cleanup(func() {
		s.api.Close()
		s.cdp.Close()
		cancel()
		s.mu.Lock()
		left := slices.Collect(maps.Values(s.sessions))
		s.sessions = map[string]*session{}
		s.mu.Unlock()
		for _, ss := range left {
			ss.browser.Close(context.Background())
		}
	})
	return s
}

// Start starts a fake whose browsers are local Chromiums (their own
// sandboxes under a fresh directory) reaching hosts (name -> 127.0.0.1:PORT)
// with the extra Chromium flags; profiles are the profiles it knows.
func Start(t testing.TB, hosts map[string]string, flags []string, profiles ...string) *Server {
	realstack.Need(t, realstack.Bubblewrap, realstack.Chromium)
	dir, err := os.MkdirTemp("/tmp", "pairbench-kernel-")
	if err != nil {
		t.Fatal(err)
	}
	// A root launcher's browsers run as users of their own.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	chromium, err := local.New(local.Config{Hosts: hosts, Flags: flags, TempDir: dir,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { chromium.Close() })
	return New(t, chromium, profiles...)
}

// SetFaults replaces the faults to come.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	s.faults = f
	s.mu.Unlock()
}

// Live returns the IDs of the browsers that exist (created, not deleted,
// not expired), sorted.
func (s *Server) Live() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, ss := range s.sessions {
		if !ss.expired {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Creates returns every create's body, in order (refused ones included).
func (s *Server) Creates() []CreateRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.creates)
}

// Deletes counts the delete requests answered with success.
func (s *Server) Deletes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deletes
}

// BadKeys returns the Authorization headers refused.
func (s *Server) BadKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.keysSeen)
}

// Expire ends browser id as Kernel's timeout would: its Chromium is
// closed, its websocket refused, and the API no longer knows it.
func (s *Server) Expire(id string) {
	s.mu.Lock()
	ss := s.sessions[id]
	delete(s.sessions, id)
	s.mu.Unlock()
	if ss != nil {
		ss.browser.Close(context.Background())
	}
}

// apiError writes Kernel's error object.
func apiError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg})
}

func (s *Server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer "+s.Key {
			s.mu.Lock()
			s.keysSeen = append(s.keysSeen, got)
			s.mu.Unlock()
			apiError(w, http.StatusUnauthorized, "unauthorized", "invalid API key")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var req CreateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", "invalid JSON body")
		return
	}
	s.mu.Lock()
	s.creates = append(s.creates, req)
	f := &s.faults
	delay := f.CreateDelay
	var fault string
	switch {
	case f.Quota > 0:
		f.Quota--
		fault = "quota"
	case f.CreateErrors > 0:
		f.CreateErrors--
		fault = "error"
	case f.ExpireOnCreate > 0:
		f.ExpireOnCreate--
		fault = "expire"
	}
	retry := f.RetryAfter
	known := req.Profile == nil || s.profiles[req.Profile.Name]
	s.mu.Unlock()

	switch fault {
	case "quota":
		if retry > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())))
		}
		apiError(w, http.StatusTooManyRequests, "rate_limited", "concurrent browser limit reached for this organization")
		return
	case "error":
		apiError(w, http.StatusInternalServerError, "internal_error", "failed to allocate a browser")
		return
	}
	if !known {
		apiError(w, http.StatusNotFound, "not_found", fmt.Sprintf("profile %q not found", req.Profile.Name))
		return
	}
	if req.TimeoutSeconds < 10 || req.TimeoutSeconds > 259200 {
		apiError(w, http.StatusBadRequest, "bad_request", "timeout_seconds must be between 10 and 259200")
		return
	}
	// The browser is made whatever the client does meanwhile, as a real
	// service's would be.
	time.Sleep(delay)
	b, err := s.browsers.Open(s.life, runner.BrowserSpec{})
	if err != nil {
		apiError(w, http.StatusInternalServerError, "internal_error", "browser did not start: "+err.Error())
		return
	}
	ss := &session{id: token()[:24], token: token(), browser: b, expired: fault == "expire"}
	s.mu.Lock()
	s.sessions[ss.id] = ss
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.object(ss, req))
}

// object is Kernel's browser object for ss.
func (s *Server) object(ss *session, req CreateRequest) map[string]any {
	host := strings.TrimPrefix(s.cdp.URL, "http://")
	o := map[string]any{
		"session_id":            ss.id,
		"cdp_ws_url":            "ws://" + host + "/browser/cdp?jwt=" + ss.token,
		"webdriver_ws_url":      "ws://" + host + "/browser/webdriver/session?jwt=" + ss.token,
		"browser_live_view_url": "http://" + host + "/browser/live?jwt=" + ss.token,
		"created_at":            time.Now().UTC().Format(time.RFC3339),
		"headless":              req.Headless,
		"stealth":               req.Stealth,
		"timeout_seconds":       req.TimeoutSeconds,
	}
	if req.Profile != nil {
		o["profile"] = map[string]any{"name": req.Profile.Name}
	}
	return o
}

func (s *Server) profile(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	known := s.profiles[r.PathValue("name")]
	s.mu.Unlock()
	if !known {
		apiError(w, http.StatusNotFound, "not_found", "profile not found")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"name": r.PathValue("name"), "id": "prof_" + r.PathValue("name")})
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ss := s.sessions[r.PathValue("id")]
	s.mu.Unlock()
	if ss == nil {
		apiError(w, http.StatusNotFound, "not_found", "browser session not found")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.object(ss, CreateRequest{Headless: true}))
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	ss := s.sessions[id]
	fail := s.faults.FailDeletes > 0
	if ss != nil && fail {
		s.faults.FailDeletes--
	}
	if ss != nil && !fail {
		delete(s.sessions, id)
		s.deletes++
	}
	s.mu.Unlock()
	switch {
	case ss == nil:
		apiError(w, http.StatusNotFound, "not_found", "browser session not found")
	case fail:
		apiError(w, http.StatusInternalServerError, "internal_error", "delete failed")
	default:
		ss.browser.Close(context.Background())
		w.WriteHeader(http.StatusNoContent)
	}
}

// websocket relays a browser's CDP websocket to its Chromium's DevTools,
// for the token in the query.
func (s *Server) websocket(w http.ResponseWriter, r *http.Request) {
	tok := r.URL.Query().Get("jwt")
	s.mu.Lock()
	var ss *session
	for _, c := range s.sessions {
		if c.token == tok && tok != "" {
			ss = c
		}
	}
	s.mu.Unlock()
	if r.URL.Path != "/browser/cdp" || ss == nil || ss.expired {
		http.Error(w, "browser session not found or expired", http.StatusNotFound)
		return
	}
	browsertest.ServeDevTools(w, r, ss.browser)
}

func token() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
