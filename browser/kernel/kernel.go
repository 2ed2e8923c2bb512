// Package kernel is Kernel's cloud browsers (kernel.sh) as a remote browser
// service: each trial's browser is created with Kernel's API (POST
// /browsers: headless, stealth when asked, a profile loaded without saving
// changes, an inactivity timeout), driven over the CDP websocket the
// answer names (cdp_ws_url), and deleted (DELETE /browsers/{id}). The
// browsers' lives, the agent's relay and the retries are browser/remote's.
//
// The API key is a host secret: it is sent to the API only, as a bearer
// token, and never to a sandbox. The CDP URL Kernel returns carries a token
// of its own, and stays on this host too.
package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pairbench/pairbench/browser/remote"
	"github.com/pairbench/pairbench/runner"
)

// DefaultBaseURL is Kernel's API.
const DefaultBaseURL = "https://api.onkernel.com"

// KeyEnv is the environment variable the API key is read from.
const KeyEnv = "KERNEL_API_KEY"

// DefaultTimeout is how long Kernel keeps a browser nobody is connected
// to: the bound on what a browser pairbench could not delete costs.
const DefaultTimeout = 120 * time.Second

// Config configures the service.
type Config struct {
	// APIKey is Kernel's API key (KeyEnv).
	APIKey string
	// BaseURL is the API's root; DefaultBaseURL when empty.
	BaseURL string
	// Timeout is the browsers' inactivity timeout (timeout_seconds);
	// DefaultTimeout when 0.
	Timeout time.Duration
	// Headful asks for headful browsers (Kernel's stronger stealth, more
	// memory); the default is headless.
	Headful bool
	// Client makes the API's requests; http.DefaultClient when nil.
	Client *http.Client
}

// Service is Kernel's browsers API. It implements remote.Service.
type Service struct {
	cfg  Config
	base *url.URL
}

var (
	_ remote.Service        = (*Service)(nil)
	_ remote.ProfileService = (*Service)(nil)
)

// New checks cfg and returns the service.
func New(cfg Config) (*Service, error) {
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("kernel: no API key (set %s)", KeyEnv)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	base, err := url.Parse(strings.TrimSuffix(cfg.BaseURL, "/"))
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("kernel: API URL %q: want http(s)://host[/path]", cfg.BaseURL)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	return &Service{cfg: cfg, base: base}, nil
}

// Name implements remote.Service.
func (s *Service) Name() string { return "kernel" }

// createRequest is POST /browsers' body, the fields pairbench sets.
type createRequest struct {
	Headless       bool     `json:"headless"`
	Stealth        bool     `json:"stealth"`
	TimeoutSeconds int      `json:"timeout_seconds"`
	Profile        *profile `json:"profile,omitempty"`
}

type profile struct {
	Name        string `json:"name"`
	SaveChanges bool   `json:"save_changes"`
}

// browserSession is the part of Kernel's browser object pairbench reads.
type browserSession struct {
	SessionID string `json:"session_id"`
	CDPWSURL  string `json:"cdp_ws_url"`
}

// Create implements remote.Service: a headless (unless Headful) browser,
// stealth when spec asks, spec's profile loaded without saving changes.
func (s *Service) Create(ctx context.Context, spec runner.BrowserSpec) (remote.Session, error) {
	body := createRequest{Headless: !s.cfg.Headful, Stealth: spec.Stealth, TimeoutSeconds: int(s.cfg.Timeout.Seconds())}
	if spec.Profile != "" {
		body.Profile = &profile{Name: spec.Profile}
	}
	var out browserSession
	if err := s.call(ctx, http.MethodPost, "/browsers", body, &out); err != nil {
		return remote.Session{}, err
	}
	if out.SessionID == "" || out.CDPWSURL == "" {
		return remote.Session{}, errors.New("kernel answered without a session_id or cdp_ws_url")
	}
	return remote.Session{ID: out.SessionID, CDPURL: out.CDPWSURL, Profile: spec.Profile}, nil
}

// Delete implements remote.Service. A browser Kernel no longer knows
// (deleted, or timed out) is gone: not an error.
func (s *Service) Delete(ctx context.Context, sess remote.Session) error {
	err := s.call(ctx, http.MethodDelete, "/browsers/"+url.PathEscape(sess.ID), nil, nil)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
		return nil
	}
	return err
}

// HasProfile implements remote.ProfileService: GET /profiles/{name}.
func (s *Service) HasProfile(ctx context.Context, name string) (bool, error) {
	err := s.call(ctx, http.MethodGet, "/profiles/"+url.PathEscape(name), nil, nil)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
		return false, nil
	}
	return err == nil, err
}

// APIError is an answer of Kernel's API that is not a success.
type APIError struct {
	Status int
	// Code and Message are Kernel's error object's fields, when it sent
	// one.
	Code, Message string
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("HTTP %d", e.Status)
	if e.Code != "" {
		msg += " " + e.Code
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		msg += fmt.Sprintf(" (check %s)", KeyEnv)
	}
	return msg
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// call makes one API request with a JSON body (nil for none) and decodes
// a success's JSON into out (nil to ignore it). A 429 is a
// *remote.QuotaError, any other failure status an *APIError.
func (s *Service) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	u := *s.base
	u.Path += path
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.cfg.APIKey)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out == nil {
			io.Copy(io.Discard, resp.Body)
			return nil
		}
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
		}
		return nil
	}
	apiErr := &APIError{Status: resp.StatusCode}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var obj struct{ Code, Message string }
	if json.Unmarshal(raw, &obj) == nil {
		apiErr.Code, apiErr.Message = obj.Code, obj.Message
	} else if text := strings.TrimSpace(string(raw)); text != "" && len(text) < 300 {
		apiErr.Message = text
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		q := &remote.QuotaError{Status: resp.StatusCode, Message: apiErr.Message, RetryAfter: remote.ParseRetryAfter(resp.Header.Get("Retry-After"))}
		if q.Message == "" {
			q.Message = apiErr.Code
		}
		return fmt.Errorf("%s %s: %w", method, path, q)
	}
	return fmt.Errorf("%s %s: %w", method, path, apiErr)
}
