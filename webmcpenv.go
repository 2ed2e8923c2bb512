package pairbench

import "slices"

// WebMCPEnv is the WebMCP environment of a trial's browser, recorded in
// both arms: what decides whether a page's WebMCP is the browser's own and
// how it behaves. A pair whose arms ran in different environments (Differs)
// is not comparable.
type WebMCPEnv struct {
	// Browser is the browser's product and version, as it reports them
	// (Chrome/156.0.8078.114).
	Browser string `json:"browser,omitempty"`
	// Switches are the browser switches the run added to the provider's
	// own, in order (--enable-blink-features=WebMCP, for one).
	Switches []string `json:"switches,omitempty"`
	// DevTools is true when the browser's DevTools WebMCP domain answered;
	// only then is FrameTools what the browser itself reported.
	DevTools bool `json:"devtools_webmcp,omitempty"`
	// FrameTools names, by frame id, the tools the browser's own WebMCP had
	// live on the start page when the setup ended (registered ones
	// included where registration went through it).
	FrameTools map[string][]string `json:"frame_tools,omitempty"`
	// Mode is the run's --webmcp: whose WebMCP treatment registered its
	// tools with and the agent's webmcp tool listed and invoked through,
	// the pinned polyfill's or the browser's own; "" in rows written
	// before it was recorded (the polyfill's).
	Mode WebMCPImpl `json:"mode,omitempty"`
	// PageNative is true when the start page had document.modelContext
	// from the browser itself (seen from an isolated world, where no
	// script's copy is visible).
	PageNative bool `json:"page_native,omitempty"`
	// OriginTrials are the origin trials the browser reported for the
	// start page's main frame, with their state.
	OriginTrials []OriginTrial `json:"origin_trials,omitempty"`
}

// OriginTrial is one origin trial as the browser reports it for a page.
type OriginTrial struct {
	Name string `json:"name"`
	// Status is the browser's: Enabled, ValidTokenNotProvided,
	// OSNotSupported or TrialNotAllowed.
	Status string `json:"status"`
}

// Differs reports whether e and o are environments a pair's arms may not
// differ in: another browser version, other switches, another mode, or a
// WebMCP domain present in one and not the other. The tools differ by design (treatment
// registers some) and are not compared. A nil environment (not recorded)
// differs from nothing.
func (e *WebMCPEnv) Differs(o *WebMCPEnv) bool {
	if e == nil || o == nil {
		return false
	}
	return e.Browser != o.Browser || e.DevTools != o.DevTools || !slices.Equal(e.Switches, o.Switches) ||
		e.Mode != "" && o.Mode != "" && e.Mode != o.Mode
}

// BrowserCall is a tool invocation as the browser's own WebMCP reported it
// (the DevTools WebMCP domain's toolInvoked and toolResponded events).
type BrowserCall struct {
	Tool string `json:"tool"`
	// Status is the browser's: Completed, Error or Canceled; "" when the
	// browser reported no response before the trial ended.
	Status string `json:"status,omitempty"`
}
