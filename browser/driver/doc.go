// Package driver is pairbench's driver of a Chromium over the Chrome
// DevTools Protocol: Browser implements runner.Browser on a CDP connection
// to a browser it did not start and knows only as a Process. The local
// provider (browser/local) starts and confines Chromium and hands New its
// pipe; Connect reaches a cloud browser's CDP websocket for the remote
// providers (browser/remote). The CDP client it runs on is
// browser/internal/cdpconn.
//
// # Tool registration
//
// In treatment, RegisterTools injects, with Page.addScriptToEvaluateOnNewDocument
// on every tab (auto-attached and paused at start, so tabs the agent opens get
// them too), a registry script holding the vendored WebMCP polyfill
// (polyfill/, @mcp-b/webmcp-polyfill 5.1.0) and a URL guard, then one script
// per tool file holding its page form (intents.Tool.Function: the file as a
// function body, the text validate evaluated; see bundle). On each top-level
// document the guard registers a tool with document.modelContext.registerTool
// only when location.href matches one of its URL patterns. A tool that does
// not register there (its file throws, WebMCP refuses it, or the browser
// cannot compile the file) is recorded with the browser's own message, the
// tool file and its line, for RegistrationFailures; nothing is evaluated from
// a string in the page, so a site's CSP cannot stop it. The guard uses the browser's URLPattern, which package
// intents' Go matcher follows (TestURLGuardAgreesWithIntents holds them to the
// same answers). Control injects nothing.
//
// Why the polyfill by default: the pinned polyfill behaves the same on
// every Chromium the bench meets, here or in a cloud browser, so a result
// cannot move because the browser was updated, and its calls cost less
// (docs/browsers.md). It defers to a native document.modelContext when one
// is present, and listing and invoking speak to either. Config.WebMCP
// native, for a browser started with its own WebMCP on (the local
// provider's NativeSwitch), injects no polyfill, and lists and invokes
// through the DevTools WebMCP domain (nativewebmcp.go), form tools
// included.
//
// The guard follows the URL within a document too: a same-document change
// (history.pushState, back and forward, a fragment) registers the tools that
// now match and withdraws the others.
//
// One case comes late: a popup opened with window.open that keeps its opener
// reuses the window of its initial about:blank, which Chromium does not count
// as a new document (FIELD-NOTES: such popups do not get the script). The
// driver notices the navigation and registers the tools there just after
// the page's first scripts.
package driver
