// Package webmcp is pairbench's MCP server for one trial. It offers the agent
// one tool, webmcp, that lists the WebMCP tools live on the browser's current
// page and invokes one by name, and it records every invocation for the row.
//
// The agent sees the same tool in both arms; only what the page holds differs.
// The package knows nothing about browsers: it talks to a Page, which the
// trial's browser implements over CDP.
package webmcp

import (
	"context"
	"encoding/json"
)

// Page is the browser's current page as the webmcp tool sees it. The trial's
// Browser implements it.
type Page interface {
	// LiveTools returns the WebMCP tools registered on the current page right
	// now, sorted by name. A page without WebMCP has none (an empty slice and
	// a nil error). The error is for a browser that cannot be reached.
	LiveTools(ctx context.Context) ([]Tool, error)

	// InvokeTool runs the live tool name on the current page with args (a JSON
	// object) and returns what it gave. A tool that threw, was not live, or
	// that the page refused to run is reported in Result.Exception with a nil
	// error; the error is for a browser that cannot be reached.
	InvokeTool(ctx context.Context, name string, args json.RawMessage) (Result, error)
}

// Tool is one WebMCP tool live on a page.
type Tool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	ReadOnly    bool            `json:"readOnlyHint"`
	// Registered is true when pairbench (the browser provider) registered the
	// tool, false for a tool the page registered itself (a native tool).
	Registered bool `json:"registered"`
}

// Result is the outcome of one invocation that reached the page.
type Result struct {
	// Text is the tool's result as the page serialised it: JSON text for an
	// object or array, the string itself for a string. Empty when Exception
	// is set.
	Text string
	// Exception is why the tool gave no result: it threw, it was not live, or
	// the page's WebMCP refused the call. Empty on success.
	Exception string
	// Registered is true when the invoked tool was one pairbench registered.
	Registered bool
}
