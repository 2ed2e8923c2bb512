// Package cdp is any cloud browser service that hands out a CDP websocket
// URL (Browserbase, Steel, browserless, a self-hosted pool and the like), as
// a remote browser service configured rather than coded. Either:
//
//   - a create/release pair of HTTP calls: Create is sent for each browser
//     and its JSON answer names the browser's websocket URL (WebSocketField)
//     and its id (IDField); Release is sent with that id when the trial is
//     done; or
//   - a plain websocket URL template: each browser gets a fresh random {id},
//     and the URL with it must reach one fresh browser, the same for every
//     connection made with that id (pairbench's own and the agent's). A
//     Release, if configured, ends it; otherwise the service ends it when
//     its connections close.
//
// Templates may use {secret} (the service's API key, a host secret read from
// SecretEnv), {id} (the browser's id: the answer's in Release, fresh in a
// template), {stealth} (true or false) and {profile} (the profile's name).
// In a URL a value is URL-escaped, in a JSON body JSON-escaped (without
// quotes), in a header as is. A spec the templates cannot carry (stealth or
// a profile without its placeholder) is refused, not silently dropped.
package cdp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/pairbench/pairbench/browser/remote"
	"github.com/pairbench/pairbench/runner"
)

// Config configures a service. It reads from JSON (the --cdp-config file):
//
//	{"name": "steel",
//	 "secret_env": "STEEL_API_KEY",
//	 "create": {"method": "POST", "url": "https://api.steel.dev/v1/sessions",
//	            "headers": {"steel-api-key": "{secret}"},
//	            "body": "{\"stealth\": {stealth}}"},
//	 "websocket_field": "websocketUrl", "id_field": "id",
//	 "release": {"method": "POST", "url": "https://api.steel.dev/v1/sessions/{id}/release",
//	             "headers": {"steel-api-key": "{secret}"}}}
type Config struct {
	// Name names the service in messages ("cdp" when empty).
	Name string `json:"name,omitempty"`
	// URL is the websocket URL template of a service without Create.
	URL string `json:"url,omitempty"`
	// Create and Release are the HTTP calls; Release is optional with URL.
	Create  *Request `json:"create,omitempty"`
	Release *Request `json:"release,omitempty"`
	// WebSocketField and IDField are where Create's JSON answer names the
	// browser's websocket URL and its id: a field name, or a dotted path
	// into nested objects ("session.connect_url").
	WebSocketField string `json:"websocket_field,omitempty"`
	IDField        string `json:"id_field,omitempty"`
	// SecretEnv names the host environment variable holding the API key;
	// Secret is its value (set by whoever reads the environment).
	SecretEnv string `json:"secret_env,omitempty"`
	Secret    string `json:"-"`
	// Client makes the requests; http.DefaultClient when nil.
	Client *http.Client `json:"-"`
}

// Request is one templated HTTP call.
type Request struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

// Service is a configured service. It implements remote.Service.
type Service struct{ cfg Config }

var _ remote.Service = (*Service)(nil)

// New checks cfg and returns the service.
func New(cfg Config) (*Service, error) {
	if cfg.Name == "" {
		cfg.Name = "cdp"
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s browsers: %s", cfg.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case cfg.URL == "" && cfg.Create == nil:
		return nil, bad("configure a websocket URL template (url) or a create request (create)")
	case cfg.URL != "" && cfg.Create != nil:
		return nil, bad("configure a websocket URL template (url) or a create request (create), not both")
	case cfg.URL != "":
		if !strings.Contains(cfg.URL, "{id}") {
			return nil, bad("the websocket URL template needs {id}: each trial's browser must be a fresh one, and every connection to it the same one")
		}
		if err := checkURL(strings.ReplaceAll(cfg.URL, "{id}", "x"), "ws", "wss"); err != nil {
			return nil, bad("url: %v", err)
		}
	default:
		if cfg.WebSocketField == "" || cfg.IDField == "" {
			return nil, bad("a create request needs websocket_field and id_field")
		}
		if cfg.Release == nil {
			return nil, bad("a create request needs its release request")
		}
	}
	for _, r := range []*Request{cfg.Create, cfg.Release} {
		if r == nil {
			continue
		}
		if r.Method == "" {
			r.Method = http.MethodPost
		}
		if err := checkURL(r.URL, "http", "https"); err != nil {
			return nil, bad("%s %s: %v", r.Method, r.URL, err)
		}
	}
	if mentions(cfg, "{secret}") && cfg.Secret == "" {
		return nil, bad("the configuration uses {secret}: set %s", orSecretEnv(cfg.SecretEnv))
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	return &Service{cfg: cfg}, nil
}

func orSecretEnv(env string) string {
	if env == "" {
		return "secret_env and that variable"
	}
	return env
}

// checkURL checks that a template's URL (placeholders aside) parses with
// one of schemes and a host.
func checkURL(raw string, schemes ...string) error {
	u, err := url.Parse(strings.NewReplacer("{secret}", "s", "{stealth}", "false", "{profile}", "p", "{id}", "i").Replace(raw))
	if err != nil {
		return err
	}
	for _, s := range schemes {
		if u.Scheme == s && u.Host != "" {
			return nil
		}
	}
	return fmt.Errorf("want a %s URL with a host", strings.Join(schemes, " or "))
}

// mentions reports whether any template of cfg holds placeholder.
func mentions(cfg Config, placeholder string) bool {
	texts := []string{cfg.URL}
	for _, r := range []*Request{cfg.Create, cfg.Release} {
		if r == nil {
			continue
		}
		texts = append(texts, r.URL, r.Body)
		for _, v := range r.Headers {
			texts = append(texts, v)
		}
	}
	for _, t := range texts {
		if strings.Contains(t, placeholder) {
			return true
		}
	}
	return false
}

// Name implements remote.Service.
func (s *Service) Name() string { return s.cfg.Name }

// values are one browser's placeholder values.
type values struct {
	secret, id, profile string
	stealth             bool
}

// expander fills templates for one place: a URL, a JSON body, a header.
func (v values) expand(tmpl string, escape func(string) string) string {
	return strings.NewReplacer(
		"{secret}", escape(v.secret), "{id}", escape(v.id), "{profile}", escape(v.profile),
		"{stealth}", strconv.FormatBool(v.stealth),
	).Replace(tmpl)
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func asIs(s string) string { return s }

// Create implements remote.Service.
func (s *Service) Create(ctx context.Context, spec runner.BrowserSpec) (remote.Session, error) {
	if spec.Stealth && !mentions(s.cfg, "{stealth}") {
		return remote.Session{}, errors.New("stealth asked, but the service's configuration has no {stealth}")
	}
	if spec.Profile != "" && !mentions(s.cfg, "{profile}") {
		return remote.Session{}, fmt.Errorf("profile %q asked, but the service's configuration has no {profile}", spec.Profile)
	}
	v := values{secret: s.cfg.Secret, profile: spec.Profile, stealth: spec.Stealth}
	if s.cfg.Create == nil {
		v.id = randomID()
		return remote.Session{ID: v.id, CDPURL: v.expand(s.cfg.URL, url.QueryEscape), Profile: spec.Profile}, nil
	}
	var answer any
	if err := s.send(ctx, *s.cfg.Create, v, &answer); err != nil {
		return remote.Session{}, err
	}
	ws, okWS := field(answer, s.cfg.WebSocketField)
	id, okID := field(answer, s.cfg.IDField)
	if !okWS || !okID || ws == "" || id == "" {
		return remote.Session{}, fmt.Errorf("the create's answer has no %q or %q", s.cfg.WebSocketField, s.cfg.IDField)
	}
	if err := checkURL(ws, "ws", "wss"); err != nil {
		return remote.Session{}, fmt.Errorf("the create's %q: %v", s.cfg.WebSocketField, err)
	}
	return remote.Session{ID: id, CDPURL: ws, Profile: spec.Profile}, nil
}

// Delete implements remote.Service: the release request, when there is
// one. A 404 is a browser already gone.
func (s *Service) Delete(ctx context.Context, sess remote.Session) error {
	if s.cfg.Release == nil {
		return nil
	}
	err := s.send(ctx, *s.cfg.Release, values{secret: s.cfg.Secret, id: sess.ID, profile: sess.Profile}, nil)
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusNotFound {
		return nil
	}
	return err
}

// StatusError is an answer that is not a success.
type StatusError struct {
	Status int
	Body   string
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body)
}

// send makes the templated request r and decodes a success's JSON into
// out (nil to ignore it). The request's URL is never quoted in an error: it
// may hold the secret.
func (s *Service) send(ctx context.Context, r Request, v values, out any) error {
	var body io.Reader
	if r.Body != "" {
		body = strings.NewReader(v.expand(r.Body, jsonEscape))
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, v.expand(r.URL, url.PathEscape), body)
	if err != nil {
		return fmt.Errorf("%s request: %w", r.Method, err)
	}
	if r.Body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, val := range r.Headers {
		req.Header.Set(k, v.expand(val, asIs))
	}
	what := r.Method + " " + req.URL.Host + req.URL.EscapedPath()
	if v.secret != "" {
		what = strings.ReplaceAll(what, url.PathEscape(v.secret), "<secret>")
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text holds the URL
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusTooManyRequests {
		return fmt.Errorf("%s: %w", what, &remote.QuotaError{Status: resp.StatusCode, Message: brief(raw),
			RetryAfter: remote.ParseRetryAfter(resp.Header.Get("Retry-After"))})
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s: %w", what, &StatusError{Status: resp.StatusCode, Body: brief(raw)})
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s: the answer is not JSON: %w", what, err)
		}
	}
	return nil
}

// brief is an answer's body for a message: short text as is.
func brief(raw []byte) string {
	text := strings.TrimSpace(string(raw))
	if len(text) > 300 {
		text = text[:300] + "…"
	}
	return text
}

// field follows a dotted path into a decoded JSON value to a string (or a
// number, as its text).
func field(v any, path string) (string, bool) {
	for _, name := range strings.Split(path, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		if v, ok = obj[name]; !ok {
			return "", false
		}
	}
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	}
	return "", false
}

func randomID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// ParseConfig reads a Config from JSON, refusing unknown fields.
func ParseConfig(b []byte) (Config, error) {
	var cfg Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("cdp browser configuration: %w", err)
	}
	return cfg, nil
}
