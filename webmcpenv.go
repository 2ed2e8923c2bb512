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
}

// Differs reports whether e and o are environments a pair's arms may not
// differ in: another browser version, other switches, or a WebMCP domain
// present in one and not the other. The tools differ by design (treatment
// registers some) and are not compared. A nil environment (not recorded)
// differs from nothing.
func (e *WebMCPEnv) Differs(o *WebMCPEnv) bool {
	if e == nil || o == nil {
		return false
	}
	return e.Browser != o.Browser || e.DevTools != o.DevTools || !slices.Equal(e.Switches, o.Switches)
}

// BrowserCall is a tool invocation as the browser's own WebMCP reported it
// (the DevTools WebMCP domain's toolInvoked and toolResponded events).
type BrowserCall struct {
	Tool string `json:"tool"`
	// Status is the browser's: Completed, Error or Canceled; "" when the
	// browser reported no response before the trial ended.
	Status string `json:"status,omitempty"`
}
