package githubtest

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

//go:embed testdata/api.github.com.json
var description []byte

// Auth says how a request authenticated.
type Auth string

const (
	AuthApp          Auth = "app"          // a GitHub App's JWT
	AuthInstallation Auth = "installation" // an installation token the fake issued
	AuthToken        Auth = "token"        // a plain token registered with AddToken
)

// Call is one request the fake received.
type Call struct {
	Method    string
	Path      string // unescaped URL path
	Query     url.Values
	Operation string // the operationId, "" if no operation matched
	Auth      Auth
	Body      []byte
	Status    int // the status the fake answered
}

// String renders the call as "METHOD /path".
func (c Call) String() string { return c.Method + " " + c.Path }

// Server is a fake GitHub REST API on a loopback port.
type Server struct {
	// URL is the API's base URL, without a trailing slash: point
	// go-github's BaseURL (with a slash added) and ghinstallation's BaseURL
	// at it.
	URL string

	srv    *httptest.Server
	router routers.Router
	now    func() time.Time

	mu            sync.Mutex
	calls         []Call
	violations    []string
	apps          map[int64]*rsa.PublicKey
	installTokens map[string]int64
	revoked       map[string]bool // installation tokens revoked before they expired
	tokens        map[string]User // plain tokens and whom they act as
	repos         map[string]*Repo
	nextID        int64
	fault         func(*http.Request) Fault
}

// User is the account a plain token acts as.
type User struct {
	Login string
	Type  string // "User" or "Bot"
}

// AppSlug is the slug of every app the fake serves; an installation
// writes as AppSlug + "[bot]".
const AppSlug = "pairbench"

// Fault is what Server.SetFaults makes the fake do to a request instead of
// answering it: nothing (the zero Fault), answer Status with Header and a
// GitHub error body, or reset the connection.
type Fault struct {
	Status int
	Header http.Header
	// Message is the error body's message; DocumentationURL its
	// documentation_url (GitHub's secondary rate limits set one).
	Message, DocumentationURL string
	// Reset resets the connection before the request is served.
	Reset bool
	// LostAnswer serves the request (a write takes effect) and then resets
	// the connection: the caller cannot tell it from Reset.
	LostAnswer bool
}

// SetFaults calls fn for every request before serving it (nil: none); a
// non-zero Fault replaces the answer. Faulted requests are recorded with
// their status (0 for a reset) and change nothing, except a LostAnswer's.
func (s *Server) SetFaults(fn func(*http.Request) Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = fn
}

// loadRouter loads the REST description and builds its router, once per
// test binary (it takes most of a second on a slow machine); both are only
// read afterwards.
var loadRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openapi3.NewLoader().LoadFromData(description)
	if err != nil {
		return nil, fmt.Errorf("load REST description: %w", err)
	}
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("REST description invalid: %w", err)
	}
	doc.Servers = nil // route on paths alone, whatever host the test server has
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	return router, nil
})

// New starts a fake GitHub for the test and stops it when the test ends,
// failing the test then if any request was refused (see TakeViolations).
func New(t testing.TB) *Server {
	t.Helper()
	router, err := loadRouter()
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	s := &Server{
		router:        router,
		now:           time.Now,
		apps:          map[int64]*rsa.PublicKey{},
		installTokens: map[string]int64{},
		tokens:        map[string]User{},
		repos:         map[string]*Repo{},
		nextID:        1000,
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(func() {
		s.srv.Close()
		if v := s.TakeViolations(); len(v) > 0 {
			t.Errorf("githubtest: %d refused request(s):\n%s", len(v), strings.Join(v, "\n"))
		}
	})
	return s
}

// AddApp registers a GitHub App: JWTs signed by the private key matching
// pub with issuer appID authenticate as the app.
func (s *Server) AddApp(appID int64, pub *rsa.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apps[appID] = pub
}

// AddToken registers a plain token acting as the Actions bot,
// github-actions[bot] (a workflow's GITHUB_TOKEN); requests bearing it may
// call any operation but the app's and the check runs' (only Apps may
// write check runs).
func (s *Server) AddToken(token string) {
	s.AddUserToken(token, User{Login: "github-actions[bot]", Type: "Bot"})
}

// RevokeInstallationTokens revokes every token issued to installation
// inst, as GitHub does when an App's installation token is revoked before
// it expires: requests bearing one are answered 401 Bad credentials.
func (s *Server) RevokeInstallationTokens(inst int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok, i := range s.installTokens {
		if i == inst {
			delete(s.installTokens, tok)
			if s.revoked == nil {
				s.revoked = map[string]bool{}
			}
			s.revoked[tok] = true
		}
	}
}

// AddUserToken registers a plain token acting as u (a personal access
// token, when u is a User).
func (s *Server) AddUserToken(token string, u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = u
}

// Repo calls fn with the repository fullName ("owner/name"), created empty
// (default branch "main") if new, while holding the server's lock.
func (s *Server) Repo(fullName string, fn func(r *Repo)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.repo(fullName))
}

func (s *Server) repo(fullName string) *Repo {
	r, ok := s.repos[fullName]
	if !ok {
		owner, name, _ := strings.Cut(fullName, "/")
		r = newRepo(owner, name)
		s.repos[fullName] = r
	}
	return r
}

// Calls returns every call received so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// CallsTo returns the calls to the operation (an operationId such as
// "issues/create-comment"), in order.
func (s *Server) CallsTo(operation string) []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Operation == operation {
			out = append(out, c)
		}
	}
	return out
}

// TakeViolations returns the refusals recorded so far and forgets them.
func (s *Server) TakeViolations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.violations
	s.violations = nil
	return v
}

// Comments returns the comments on an issue or pull request, oldest first.
func (s *Server) Comments(fullName string, issue int) []Comment {
	var out []Comment
	s.Repo(fullName, func(r *Repo) {
		for _, c := range r.Comments {
			if c.Issue == issue {
				out = append(out, c)
			}
		}
	})
	return out
}

// IssueLabels returns the names of the labels on an issue or pull request.
func (s *Server) IssueLabels(fullName string, issue int) []string {
	var out []string
	s.Repo(fullName, func(r *Repo) { out = slices.Clone(r.IssueLabels[issue]) })
	return out
}

// CheckRuns returns the repository's check runs in creation order.
func (s *Server) CheckRuns(fullName string) []CheckRun {
	var out []CheckRun
	s.Repo(fullName, func(r *Repo) { out = slices.Clone(r.CheckRuns) })
	return out
}

// Statuses returns the commit statuses posted on sha, oldest first.
func (s *Server) Statuses(fullName, sha string) []Status {
	var out []Status
	s.Repo(fullName, func(r *Repo) {
		for _, st := range r.Statuses {
			if st.SHA == sha {
				out = append(out, st)
			}
		}
	})
	return out
}

// Dispatches returns the repository's workflow_dispatch requests in order.
func (s *Server) Dispatches(fullName string) []Dispatch {
	var out []Dispatch
	s.Repo(fullName, func(r *Repo) { out = slices.Clone(r.Dispatches) })
	return out
}

// apiError is GitHub's error body.
type apiError struct {
	Message string `json:"message"`
	Status  string `json:"status"`
}

// request is one request being served.
type request struct {
	*http.Request
	body   []byte
	params map[string]string
	auth   Auth
	inst   int64  // installation, for AuthInstallation
	token  string // the credential
}

func bearer(hr *http.Request) string {
	_, cred, _ := strings.Cut(hr.Header.Get("Authorization"), " ")
	return cred
}

// response is what a handler answers.
type response struct {
	status int
	body   any
	header http.Header
}

func reply(status int, body any) response { return response{status: status, body: body} }

func fail(status int, format string, args ...any) response {
	return response{status: status, body: apiError{Message: fmt.Sprintf(format, args...), Status: strconv.Itoa(status)}}
}

// contentsPath matches the contents endpoint, whose {path} holds slashes.
var contentsPath = regexp.MustCompile(`^(/repos/[^/]+/[^/]+/contents/)(.+)$`)

func (s *Server) serve(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(io.LimitReader(hr.Body, 32<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	call := Call{Method: hr.Method, Path: hr.URL.Path, Query: hr.URL.Query(), Body: body}
	lost := false
	s.mu.Lock()
	faultFn := s.fault
	s.mu.Unlock()
	if faultFn != nil {
		f := faultFn(hr)
		if f.Reset || f.Status != 0 {
			s.serveFault(w, call, f)
			return
		}
		lost = f.LostAnswer
	}
	resp := s.handle(hr, body, &call)
	call.Status = resp.status

	s.mu.Lock()
	s.calls = append(s.calls, call)
	if v, ok := resp.body.(violation); ok {
		s.violations = append(s.violations, fmt.Sprintf("%s: %d %s", call, resp.status, v.Message))
	}
	s.mu.Unlock()
	if lost {
		resetConn(w)
		return
	}

	for k, vs := range resp.header {
		w.Header()[k] = vs
	}
	if resp.body == nil {
		w.WriteHeader(resp.status)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(resp.status)
	_ = json.NewEncoder(w).Encode(resp.body)
}

func (s *Server) serveFault(w http.ResponseWriter, call Call, f Fault) {
	call.Status = f.Status
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()
	if f.Reset {
		resetConn(w)
		return
	}
	for k, vs := range f.Header {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(f.Status)
	body := map[string]any{"message": f.Message, "status": strconv.Itoa(f.Status)}
	if f.DocumentationURL != "" {
		body["documentation_url"] = f.DocumentationURL
	}
	_ = json.NewEncoder(w).Encode(body)
}

// resetConn resets the request's connection (RST, not FIN) without an
// answer.
func resetConn(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(interface{ SetLinger(int) error }); ok {
				_ = tc.SetLinger(0)
			}
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// violation marks responses that refuse a request the bot should never
// make, as opposed to ordinary answers such as "Not Found" for a missing
// file, which GitHub gives and the bot must handle.
type violation struct{ apiError }

func refuse(status int, format string, args ...any) response {
	return response{status: status, body: violation{apiError{Message: fmt.Sprintf(format, args...), Status: strconv.Itoa(status)}}}
}

func (s *Server) handle(hr *http.Request, body []byte, call *Call) response {
	// Route a copy whose contents path is one segment, as gorillamux
	// matches {path} within a segment.
	routed := hr.Clone(hr.Context())
	routed.Body = io.NopCloser(bytes.NewReader(body))
	filePath := ""
	if m := contentsPath.FindStringSubmatch(hr.URL.Path); m != nil {
		filePath = m[2]
		routed.URL.Path = m[1] + "x"
		routed.URL.RawPath = ""
	}
	route, params, err := s.router.FindRoute(routed)
	if err != nil {
		return refuse(http.StatusNotFound, "unknown endpoint: %v", err)
	}
	for k, v := range params {
		if u, err := url.PathUnescape(v); err == nil {
			params[k] = u
		}
	}
	if filePath != "" {
		params["path"] = filePath
	}
	call.Operation = route.Operation.OperationID

	auth, inst, resp, ok := s.authenticate(hr, route)
	call.Auth = auth
	if !ok {
		return resp
	}
	in := &openapi3filter.RequestValidationInput{
		Request:    routed,
		PathParams: params,
		Route:      route,
		Options:    &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	if filePath != "" {
		in.PathParams = map[string]string{"owner": params["owner"], "repo": params["repo"], "path": "x"}
	}
	if err := openapi3filter.ValidateRequest(hr.Context(), in); err != nil {
		return refuse(http.StatusUnprocessableEntity, "request does not match GitHub's description of %s: %v", route.Operation.OperationID, err)
	}
	h, ok := handlers[route.Operation.OperationID]
	if !ok {
		return refuse(http.StatusNotImplemented, "the fake does not implement %s", route.Operation.OperationID)
	}
	req := &request{Request: hr, body: body, params: params, auth: auth, inst: inst, token: bearer(hr)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if owner, name := params["owner"], params["repo"]; owner != "" {
		r, ok := s.repos[owner+"/"+name]
		if !ok {
			return fail(http.StatusNotFound, "Not Found")
		}
		if auth == AuthInstallation && r.Installation != 0 && r.Installation != inst {
			return refuse(http.StatusNotFound, "installation %d cannot reach %s/%s", inst, owner, name)
		}
		return h(s, req, r)
	}
	return h(s, req, nil)
}

// authenticate classifies the Authorization header and checks the
// operation is allowed for it. ok is false when resp refuses the request.
func (s *Server) authenticate(hr *http.Request, route *routers.Route) (auth Auth, inst int64, resp response, ok bool) {
	h := hr.Header.Get("Authorization")
	scheme, cred, _ := strings.Cut(h, " ")
	isAppOp := route.Path == "/app" || strings.HasPrefix(route.Path, "/app/")
	if strings.EqualFold(scheme, "bearer") && strings.Count(cred, ".") == 2 {
		appID, err := s.verifyJWT(cred)
		if err != nil {
			return AuthApp, 0, refuse(http.StatusUnauthorized, "bad app JWT: %v", err), false
		}
		if !isAppOp {
			return AuthApp, 0, refuse(http.StatusForbidden, "app %d called %s with its JWT; that needs an installation token", appID, route.Operation.OperationID), false
		}
		return AuthApp, 0, response{}, true
	}
	if !strings.EqualFold(scheme, "token") && !strings.EqualFold(scheme, "bearer") {
		return "", 0, refuse(http.StatusUnauthorized, "no credentials"), false
	}
	s.mu.Lock()
	inst, isInst := s.installTokens[cred]
	_, plain := s.tokens[cred]
	revoked := s.revoked[cred]
	s.mu.Unlock()
	switch {
	case revoked:
		// GitHub's answer, which a client must handle: not a violation.
		return AuthInstallation, 0, fail(http.StatusUnauthorized, "Bad credentials"), false
	case isInst:
		if isAppOp {
			return AuthInstallation, inst, refuse(http.StatusForbidden, "%s needs the app's JWT", route.Operation.OperationID), false
		}
		if !enabledForApps(route.Operation) {
			return AuthInstallation, inst, refuse(http.StatusForbidden, "%s is not enabled for GitHub Apps", route.Operation.OperationID), false
		}
		return AuthInstallation, inst, response{}, true
	case plain:
		if isAppOp {
			return AuthToken, 0, refuse(http.StatusForbidden, "%s needs the app's JWT", route.Operation.OperationID), false
		}
		if strings.HasPrefix(route.Operation.OperationID, "checks/create") || strings.HasPrefix(route.Operation.OperationID, "checks/update") {
			// GitHub: "Resource not accessible by personal access token".
			return AuthToken, 0, refuse(http.StatusForbidden, "%s: only GitHub Apps may write check runs", route.Operation.OperationID), false
		}
		return AuthToken, 0, response{}, true
	}
	return "", 0, refuse(http.StatusUnauthorized, "Bad credentials"), false
}

// enabledForApps reads the operation's x-github.enabledForGitHubApps.
func enabledForApps(op *openapi3.Operation) bool {
	raw, err := json.Marshal(op.Extensions["x-github"])
	if err != nil {
		return false
	}
	var x struct {
		Enabled bool `json:"enabledForGitHubApps"`
	}
	return json.Unmarshal(raw, &x) == nil && x.Enabled
}

// verifyJWT checks an RS256 JWT against the registered apps and returns
// the app id it was issued by.
func (s *Server) verifyJWT(tok string) (int64, error) {
	parts := strings.Split(tok, ".")
	dec := base64.RawURLEncoding
	hdr, err1 := dec.DecodeString(parts[0])
	payload, err2 := dec.DecodeString(parts[1])
	sig, err3 := dec.DecodeString(parts[2])
	if err := errors.Join(err1, err2, err3); err != nil {
		return 0, err
	}
	var h struct {
		Alg string `json:"alg"`
	}
	var c struct {
		Iss json.RawMessage `json:"iss"`
		Exp int64           `json:"exp"`
		Iat int64           `json:"iat"`
	}
	if err := errors.Join(json.Unmarshal(hdr, &h), json.Unmarshal(payload, &c)); err != nil {
		return 0, err
	}
	if h.Alg != "RS256" {
		return 0, fmt.Errorf("alg %q, want RS256", h.Alg)
	}
	appID, err := strconv.ParseInt(strings.Trim(string(c.Iss), `"`), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("iss %s is not an app id", c.Iss)
	}
	s.mu.Lock()
	pub := s.apps[appID]
	s.mu.Unlock()
	if pub == nil {
		return 0, fmt.Errorf("unknown app %d", appID)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig); err != nil {
		return 0, fmt.Errorf("signature: %w", err)
	}
	now := s.now().Unix()
	if c.Exp < now || c.Exp-c.Iat > 600 {
		return 0, fmt.Errorf("expired or lasting more than 10 minutes (iat %d, exp %d, now %d)", c.Iat, c.Exp, now)
	}
	return appID, nil
}
