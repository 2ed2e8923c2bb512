package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner/webmcp"
)

// Browsers is a browser provider: it opens one fresh browser per trial.
// The local provider (browser/local) starts Chromium on this machine; a
// cloud provider (browser/remote, with browser/kernel or browser/cdp) has a
// service create one and deletes it at Close. Both drive their browsers
// with pairbench's driver (browser/driver).
type Browsers interface {
	// Open starts a fresh browser as spec asks and returns it with one open,
	// blank tab (the start tab). The browser lives until Close, or until ctx
	// ends, whichever comes first; either way everything it holds is freed.
	// Open returns an error, and holds nothing, when the browser cannot be
	// started or when the provider cannot honour spec.
	Open(ctx context.Context, spec BrowserSpec) (Browser, error)

	// HasProfile reports whether the provider's browsers can load the
	// stored profile name (a signed-in session): the smoke gate asks it for
	// each signed-in domain's profile before anything is frozen. A provider
	// without profiles answers false; one whose service cannot be asked
	// answers true, and its Open tells.
	HasProfile(ctx context.Context, name string) (bool, error)
}

// BrowserSpec is what a trial asks of its browser beyond a fresh one. Both
// arms of a pair ask for the same spec.
type BrowserSpec struct {
	// Profile names a stored browser profile (a signed-in session) to load
	// without saving changes; "" starts from an empty profile.
	Profile string
	// Stealth asks for the provider's anti-bot measures.
	Stealth bool
}

// Browser is one trial's browser. Its methods may be called from several
// goroutines (the trial and the webmcp server use it at once). Every
// provider's browsers do all of it, local and cloud alike, since all are
// Chromiums that pairbench's driver (browser/driver) drives over CDP; what
// only some can do is a separate interface the trial asks for:
// RefusalReporter and Prestarter.
type Browser interface {
	// DevTools says how the trial's agent reaches the browser's Chrome
	// DevTools Protocol endpoint: the agent's browser-control server
	// attaches to it. It is valid from Open until Close.
	DevTools() DevTools

	// RegisterTools arranges for tools to be registered with WebMCP
	// (document.modelContext.registerTool) on every top-level document of
	// every tab, including tabs opened later, before the page's own scripts
	// run, and only while the document's URL matches one of the tool's
	// URLPatterns. It applies to documents created after it returns, so call
	// it once, before Load. Registration lasts until Close.
	RegisterTools(ctx context.Context, tools []intents.Tool) error

	// Load navigates the start tab to url and returns once the page has
	// loaded. A first navigation that leaves the page unparsed for the
	// provider's parse timeout is made once more. Load returns an error that
	// says why when the page did not load; the browser is then unfit for a
	// trial and should be closed.
	Load(ctx context.Context, url string) (LoadInfo, error)

	// LiveTools returns the WebMCP tools live on the current page (the tab
	// opened last that is still open; the start tab until the agent opens
	// another), sorted by name, each marked Registered when RegisterTools put
	// it there. A page without WebMCP has none.
	LiveTools(ctx context.Context) ([]webmcp.Tool, error)

	// InvokeTool runs the live tool name on the current page with args (a
	// JSON object). A tool that threw, is not live, or that the page refused
	// to run is reported in Result.Exception with a nil error; the error is
	// for a browser that cannot be reached.
	InvokeTool(ctx context.Context, name string, args json.RawMessage) (webmcp.Result, error)

	// RegistrationFailures returns the tools RegisterTools registered that
	// did not become live on a page whose URL their patterns match, each
	// with the browser's own message: on the current page, checked now, and
	// on the pages LiveTools listed before, each tool, page and message once,
	// in the order seen. The error is for a browser that cannot be reached.
	RegistrationFailures(ctx context.Context) ([]pairbench.RegistrationFailure, error)

	// RunTool runs tool's execute once with args (a JSON object) on the
	// current page without registering it: the signed-in check, run the
	// same way in both arms, so control stays tool-free. A tool that threw
	// is reported in Result.Exception with a nil error.
	RunTool(ctx context.Context, tool intents.Tool, args json.RawMessage) (webmcp.Result, error)

	// NativeWebMCP reports whether the current page has WebMCP built into
	// the browser, told apart from a script's (the polyfill, or a page's
	// copy). Registration then goes through it: the polyfill defers to a
	// native document.modelContext.
	NativeWebMCP(ctx context.Context) (bool, error)

	// WebMCPEnv reports the browser's WebMCP environment on the current
	// page: its version, the switches it was started with, the run's
	// WebMCP mode and, where its DevTools WebMCP domain answers, the tools
	// the browser itself sees per frame. It is never nil with a nil error.
	WebMCPEnv(ctx context.Context) (*pairbench.WebMCPEnv, error)

	// BrowserCalls returns the tool invocations the browser's own WebMCP
	// reported, in order, and false when it cannot tell: it has no
	// DevTools WebMCP domain, or its record is no longer whole.
	BrowserCalls() ([]pairbench.BrowserCall, bool)

	// PageState reads the page the agent left (the tab opened last that
	// is still open) from a world the page's scripts cannot reach, and
	// for each selector its first match: what an intent's hard checks
	// test and its judge is shown.
	PageState(ctx context.Context, selectors []string) (pairbench.PageState, error)

	// Screenshot returns a PNG of the current page (the tab LiveTools
	// lists) as it is, laid out at rundir.ScreenshotWidth ×
	// ScreenshotHeight. The trial calls it once the agent has ended, in
	// both arms, before anything else touches the browser.
	Screenshot(ctx context.Context) ([]byte, error)

	// Close ends the browser: every process, connection, profile directory
	// or cloud session it holds is gone when Close returns nil. Close is safe
	// to call more than once and after ctx of Open ended.
	Close(ctx context.Context) error
}

// DevTools is how an agent's sandbox reaches a browser's Chrome DevTools
// Protocol endpoint.
type DevTools struct {
	// URL is the CDP endpoint as the agent's processes dial it: a
	// browser-level websocket URL (ws://…/devtools/browser/…), or an
	// http://HOST:PORT endpoint whose /json/version names it (what
	// Playwright's connectOverCDP reads).
	URL string
	// Socket, when set, is a unix socket on this host that the agent's
	// sandbox relays Port of its own loopback to; URL then names
	// 127.0.0.1:Port. It is the browser's only endpoint: no process dials
	// it by a port on this host. Empty for a browser reached at URL itself
	// (a cloud browser).
	Socket string
	Port   int
}

// Refusal is a request of the trial's browser that its egress refused: a
// page (or the agent through it) asked for a destination the browser
// policy does not allow.
type Refusal struct {
	At     time.Time `json:"at"`
	Host   string    `json:"host"`
	Port   int       `json:"port"`
	Reason string    `json:"reason"`
}

// RefusalReporter is implemented by a Browser whose egress the provider
// controls: the local browsers (browser/local), whose web egress is
// pairbench's own. A cloud browser (browser/remote) is not one: its egress
// is the service's, which tells pairbench nothing of what it refused, and
// a count of none would claim what nobody saw. The trial records the
// refusals with the row, so a site that needs something the policy refuses
// shows in the report.
type RefusalReporter interface {
	// Refusals returns the refusals since the browser opened, oldest
	// first, and how many there were: a provider may keep only the first
	// ones of a page that makes them without end.
	Refusals() (kept []Refusal, total int)
}

// Prestarter is implemented by a Browser whose provider starts the next
// browser ahead of Open: the local provider's spares. A cloud provider
// creates each browser at Open, so it has nothing to start early. The trial calls AgentRunning once its agent has
// started, so that the next browser's start (CPU-heavy) overlaps this
// trial's model turns rather than the agent's own start-up. Closing the
// browser counts as the same signal.
type Prestarter interface{ AgentRunning() }

// A Browser is the Page the webmcp tool works on.
var _ webmcp.Page = Browser(nil)

// LoadInfo says how the start page loaded.
type LoadInfo struct {
	// URL is the page's location after the load (after redirects).
	URL string `json:"url"`
	// Navigations is 1, or 2 when the first navigation stalled.
	Navigations int `json:"navigations"`
	// Parsed and Loaded are how long after the first navigation began the
	// page was parsed (readyState left "loading") and fully loaded.
	Parsed time.Duration `json:"parsed_ns"`
	Loaded time.Duration `json:"loaded_ns"`
	// LoadedAt is when the page finished loading; the trial's start delay
	// counts from it.
	LoadedAt time.Time `json:"loaded_at"`
}

// DefaultSetupAttempts is how many fresh browsers a trial's setup tries
// before the trial is aborted.
const DefaultSetupAttempts = 3

// SetupSpec is what one trial needs from its browser before the agent
// starts.
type SetupSpec struct {
	Arm      pairbench.Arm
	StartURL string
	// Tools are registered (after the domain's filters): treatment's,
	// or control's when the run's control arm registers tools (tools@REV);
	// an arm without tools registers nothing.
	Tools []intents.Tool
	// EntryTool, when set, must be live, as a registered tool, on the
	// start page of an arm that registers tools.
	EntryTool string
	Browser   BrowserSpec
	// SignedInCheck, when set, is the domain's signed_in_check tool: run on
	// the start page in both arms (unregistered, see Browser.RunTool), it must
	// not throw. A check that fails ends the setup at once: another browser
	// loads the same lapsed session.
	SignedInCheck *intents.Tool
	// Attempts is how many fresh browsers to try; 0 means
	// DefaultSetupAttempts.
	Attempts int
}

// Setup is a browser ready for a trial's agent.
// It encodes as the trial's setup.json (without the browser).
type Setup struct {
	Browser Browser  `json:"-"`
	Load    LoadInfo `json:"load"`
	// Native names the page's own WebMCP tools live on the start page, in
	// either arm.
	Native []string `json:"native_tools,omitempty"`
	// NativeWebMCP is true when the start page had the browser's own
	// WebMCP (then the tools registered through it, not through the
	// polyfill); recorded in both arms.
	NativeWebMCP bool `json:"native_webmcp"`
	// WebMCP is NativeWebMCP as the row records it: native or polyfill.
	WebMCP pairbench.WebMCPImpl `json:"webmcp_impl,omitempty"`
	// Env is the browser's WebMCP environment on the start page.
	Env *pairbench.WebMCPEnv `json:"webmcp_env,omitempty"`
	// SignedIn names the signed_in_check tool that passed on the start
	// page, when the domain has one.
	SignedIn string `json:"signed_in_check,omitempty"`
	// Failures says why each earlier browser was discarded, in order.
	Failures []string `json:"failures,omitempty"`
	// Timing breaks down the setup of the browser that succeeded.
	Timing SetupTiming `json:"timing"`
}

// SetupTiming is how long each step of a successful setup took.
type SetupTiming struct {
	Open     time.Duration `json:"open_ns"`
	Register time.Duration `json:"register_ns"`
	Load     time.Duration `json:"load_ns"`
	Check    time.Duration `json:"check_ns"`
}

// Total is the whole setup of the browser that succeeded.
func (t SetupTiming) Total() time.Duration { return t.Open + t.Register + t.Load + t.Check }

// SetupError is returned when every browser a setup tried failed, or when
// the registered tools did not register, which another browser cannot
// change; the trial is aborted with Reason.
type SetupError struct {
	// Failures says why each browser failed, in order.
	Failures []string
	// Unregistered are the tools that did not register on the start page.
	Unregistered []pairbench.RegistrationFailure
	// SignedOut is true when the signed-in check failed.
	SignedOut bool

	// errs are the failures as errors, for errors.Is and As (a full disk).
	errs []error
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("browser setup failed on %d browser(s): %s", len(e.Failures), e.Reason())
}

// Unwrap returns each browser's failure, in order.
func (e *SetupError) Unwrap() []error { return e.errs }

// Reason is the last browser's failure, for the row.
func (e *SetupError) Reason() string {
	if len(e.Failures) == 0 {
		return "no browser tried"
	}
	return e.Failures[len(e.Failures)-1]
}

// closeTimeout bounds the close of a discarded browser, which runs even when
// the setup's context has ended.
const closeTimeout = 10 * time.Second

// SetUpBrowser prepares a trial's browser: it opens a fresh browser,
// registers spec.Tools (treatment's, or a tools@REV control's), loads the
// start page, and checks the page: with tools the entry tool must be live
// as a registered tool, without them no registered (custom) tool may be
// live. Both arms record the page's own
// tools. A browser that fails any step is closed and a fresh one is tried, up
// to spec.Attempts browsers; then SetUpBrowser returns a *SetupError. It
// returns ctx's error when ctx ends first. On success the caller owns
// Setup.Browser and must Close it.
func SetUpBrowser(ctx context.Context, log *slog.Logger, browsers Browsers, spec SetupSpec) (*Setup, error) {
	if !spec.Arm.Valid() {
		return nil, fmt.Errorf("browser setup: unknown arm %q", spec.Arm)
	}
	attempts := spec.Attempts
	if attempts <= 0 {
		attempts = DefaultSetupAttempts
	}
	var failures []string
	var errs []error
	for i := range attempts {
		setup, err := setUpOnce(ctx, browsers, spec)
		if err == nil {
			setup.Failures = failures
			return setup, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("browser setup: %w", context.Cause(ctx))
		}
		failures, errs = append(failures, err.Error()), append(errs, err)
		log.Warn("browser setup failed", "arm", spec.Arm, "attempt", i+1, "of", attempts, "err", err)
		var ue *UnregisteredError
		if errors.As(err, &ue) {
			// The tool files decide it: a fresh browser registers them alike.
			return nil, &SetupError{Failures: failures, Unregistered: ue.Failures, errs: errs}
		}
		var pt *PageToolsError
		if errors.As(err, &pt) {
			// The page decides it: a fresh browser loads the same tools.
			return nil, &SetupError{Failures: failures, errs: errs}
		}
		var so *SignedOutError
		if errors.As(err, &so) {
			// The profile decides it: a fresh browser loads the same session.
			return nil, &SetupError{Failures: failures, SignedOut: true, errs: errs}
		}
	}
	return nil, &SetupError{Failures: failures, errs: errs}
}

// UnregisteredError says that registered tools did not become live on a
// page whose URL their patterns match.
type UnregisteredError struct {
	Failures []pairbench.RegistrationFailure
}

func (e *UnregisteredError) Error() string {
	parts := make([]string, len(e.Failures))
	for i, f := range e.Failures {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// SignedOutError says that the domain's signed-in check failed on the
// start page: the profile's session has lapsed.
type SignedOutError struct {
	Tool, URL string
	// Reason is what the check threw.
	Reason string
}

func (e *SignedOutError) Error() string {
	return fmt.Sprintf("signed-in check %s failed on %s (the profile's session has lapsed?): %s", e.Tool, e.URL, e.Reason)
}

// checkSignedIn runs the signed-in check on the page b shows at url.
func checkSignedIn(ctx context.Context, b Browser, url string, check intents.Tool) error {
	res, err := b.RunTool(ctx, check, nil)
	if err != nil {
		return fmt.Errorf("signed-in check %s: %w", check.Name, err)
	}
	if res.Exception != "" {
		return &SignedOutError{Tool: check.Name, URL: url, Reason: res.Exception}
	}
	return nil
}

// checkTreatmentPage checks the page b shows at url after RegisterTools:
// entry must be live as a registered tool, and none of tools may have
// failed to register there (an *UnregisteredError, naming each tool, its
// file and the browser's message). It returns the page's own (native)
// tools.
func checkTreatmentPage(ctx context.Context, b Browser, url, entry string, tools []intents.Tool) ([]string, error) {
	live, err := b.LiveTools(ctx)
	if err != nil {
		return nil, fmt.Errorf("list live tools: %w", err)
	}
	failed, err := b.RegistrationFailures(ctx)
	if err != nil {
		return nil, fmt.Errorf("read registration failures: %w", err)
	}
	var here []pairbench.RegistrationFailure
	for _, f := range failed {
		if f.URL == url && slices.ContainsFunc(tools, func(t intents.Tool) bool { return t.Name == f.Tool }) {
			here = append(here, f)
		}
	}
	// The entry tool's failure first: it is what the trial needed.
	slices.SortStableFunc(here, func(a, b pairbench.RegistrationFailure) int {
		return compareBool(b.Tool == entry, a.Tool == entry)
	})
	if len(here) > 0 {
		return nil, &UnregisteredError{Failures: here}
	}
	custom, native := splitLive(live)
	if entry != "" && !slices.Contains(custom, entry) {
		return nil, fmt.Errorf("entry tool %s is not live on %s (registered tools live: %s)", entry, url, listOrNone(custom))
	}
	return native, nil
}

// splitLive names the live tools pairbench registered (custom) and the
// page's own (native).
func splitLive(live []webmcp.Tool) (custom, native []string) {
	for _, t := range live {
		if t.Registered {
			custom = append(custom, t.Name)
		} else {
			native = append(native, t.Name)
		}
	}
	return custom, native
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// setUpOnce tries one fresh browser and closes it unless it is ready.
func setUpOnce(ctx context.Context, browsers Browsers, spec SetupSpec) (_ *Setup, err error) {
	var timing SetupTiming
	start := time.Now()
	b, err := browsers.Open(ctx, spec.Browser)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
			defer cancel()
			if cerr := b.Close(cctx); cerr != nil {
				err = fmt.Errorf("%w (and closing the browser: %v)", err, cerr)
			}
		}
	}()
	timing.Open = time.Since(start)

	if len(spec.Tools) > 0 {
		start = time.Now()
		if err := b.RegisterTools(ctx, spec.Tools); err != nil {
			return nil, fmt.Errorf("register tools: %w", err)
		}
		timing.Register = time.Since(start)
	}

	start = time.Now()
	load, err := b.Load(ctx, spec.StartURL)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", spec.StartURL, err)
	}
	timing.Load = time.Since(start)

	start = time.Now()
	var native []string
	if len(spec.Tools) > 0 {
		if native, err = checkTreatmentPage(ctx, b, load.URL, spec.EntryTool, spec.Tools); err != nil {
			return nil, err
		}
	} else {
		live, err := b.LiveTools(ctx)
		if err != nil {
			return nil, fmt.Errorf("list live tools: %w", err)
		}
		var custom []string
		custom, native = splitLive(live)
		if len(custom) > 0 {
			return nil, fmt.Errorf("%s page %s already has custom tools: %s", spec.Arm, load.URL, strings.Join(custom, ", "))
		}
	}
	nativeWebMCP, err := b.NativeWebMCP(ctx)
	if err != nil {
		return nil, err
	}
	impl := pairbench.WebMCPPolyfill
	if nativeWebMCP {
		impl = pairbench.WebMCPNative
	}
	env, err := b.WebMCPEnv(ctx)
	if err != nil {
		return nil, fmt.Errorf("WebMCP environment: %w", err)
	}
	if len(spec.Tools) == 0 {
		if err := checkToolFree(spec.Arm, load.URL, env); err != nil {
			return nil, err
		}
	}
	var signedIn string
	if c := spec.SignedInCheck; c != nil {
		if err := checkSignedIn(ctx, b, load.URL, *c); err != nil {
			return nil, err
		}
		signedIn = c.Name
	}
	timing.Check = time.Since(start)
	return &Setup{Browser: b, Load: load, Native: native, NativeWebMCP: nativeWebMCP, WebMCP: impl, Env: env, SignedIn: signedIn, Timing: timing}, nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
