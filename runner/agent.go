package runner

import (
	"context"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench"
)

// Agent runs one agent to completion on one task. Adapters live in
// agent/...; the trial never knows which agent it drives.
type Agent interface {
	// Run starts the agent on the task and returns what it did. It returns an
	// error only when the agent could not be run or observed at all (a
	// missing binary, a sandbox that failed to start); everything the agent
	// itself did, including failing, is reported in the AgentResult. Run
	// enforces the task's caps and returns when the agent exits, a cap is
	// hit (the agent is killed first), or ctx is done.
	Run(ctx context.Context, task AgentTask) (AgentResult, error)
}

// AgentTask is everything an agent run is given. Both arms of a pair get the
// same task except for what their browser shows.
type AgentTask struct {
	// Prompt is the user's task; SystemPrompt is appended to the agent's own.
	Prompt       string
	SystemPrompt string
	// Model names the model as provider/id (e.g. "scripted/pairbench-scripted").
	Model rundir.Model
	// MCPServers are the servers whose tools the agent may call, reached on
	// loopback ports.
	MCPServers []MCPServer
	// LoopbackPorts are ports on this host's loopback the agent's processes
	// may reach (pairbench's MCP server); the adapter forwards them into its
	// sandbox and nothing else on loopback.
	LoopbackPorts []int
	// Sockets are unix sockets on this host the agent's processes reach on
	// a port of their own loopback (the key): the browser's DevTools, which
	// has no port on this host. The adapter relays them into its sandbox.
	Sockets map[int]string
	// Allowlist is exactly the set of tool names the agent must declare to
	// its model; the agent adapter reports what it really declared.
	Allowlist []string
	Caps      Caps
	// Dir is an empty per-trial directory the adapter may use for the agent's
	// home, configuration and workspace; the caller removes it.
	Dir string
	// TranscriptPath is where the adapter writes the redacted transcript.
	TranscriptPath string
	// StepsPath, when set, is where the adapter writes the transcript's
	// steps (TrialSteps), redacted, as the agent writes them; their times
	// count from Start, the trial's start.
	StepsPath string
	Start     time.Time
	// Started, when set, is called once, from any goroutine, when the
	// agent begins its first turn: its own start-up and its MCP servers'
	// are over.
	Started func()
}

// MCPServer is one MCP server the agent connects to, in one of three ways:
//   - over streamable HTTP at URL, a server already running;
//   - as a child process the agent starts (Command with Args), speaking MCP
//     on stdio inside the agent's sandbox;
//   - with Listen set, as a streamable-HTTP server (Command with Args,
//     listening on 127.0.0.1:Listen at /mcp) that the adapter starts beside
//     the agent, in its sandbox, at the moment the agent starts, so that
//     neither start-up waits for the other.
type MCPServer struct {
	Name    string
	URL     string
	Command string
	Args    []string
	Listen  int
}

// Caps are the limits enforced on an agent from outside.
type Caps struct {
	Time  time.Duration `json:"time"`
	Turns int           `json:"turns"`
	// SpendUSD is the most one agent run may cost.
	SpendUSD float64 `json:"spend_usd"`
}

// AgentResult is what one agent run did.
type AgentResult struct {
	// Final is the text of the last assistant message.
	Final string
	// StopReason is the final assistant message's stop reason ("stop",
	// "error", "aborted", ...); ErrorMessage its error text, if any.
	StopReason   string
	ErrorMessage string
	// ProviderGaveUp is true when the model provider kept failing and the
	// agent stopped retrying: the trial says nothing about the agent.
	ProviderGaveUp bool
	Turns          int
	InputTokens    int64
	OutputTokens   int64
	// Cost is the summed cost the agent reported; CostMissing is true when
	// some assistant message reported none or a non-number.
	Cost        float64
	CostMissing bool
	// CapHit names the cap that stopped the agent, if any.
	CapHit pairbench.Cap
	// Declared is the set of tools the agent declared to its model.
	Declared []string
	// Calls are the agent's tool calls in order.
	Calls []ToolCall
	Wall  time.Duration
	// ExitCode is the agent process's exit status (-1 when killed).
	ExitCode int
	// Stderr is the tail of the agent's diagnostics, redacted.
	Stderr string
	// TranscriptTimes holds, for each line of the transcript, when the
	// agent wrote it.
	TranscriptTimes []time.Time
}

// ToolCall is one tool call the agent made and how it ended.
type ToolCall struct {
	Name    string
	IsError bool
}

// CapsOf returns the plan's caps as the agent's caps.
func CapsOf(c rundir.PlanCaps) Caps {
	return Caps{Time: time.Duration(c.TimeS * float64(time.Second)), Turns: c.Turns, SpendUSD: c.SpendUSD}
}
