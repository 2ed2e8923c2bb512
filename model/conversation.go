package model

import (
	"fmt"
	"strings"

	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
)

// conversation is a request in the terms the script reads, whichever API it
// came in: the user's words, the tools declared, and the results of the
// calls made so far.
type conversation struct {
	// user holds the text of every user message, in order.
	user []string
	// tools maps each declared tool (namespaced tools by their full
	// name, namespace + "__" + name) to its parameter names.
	tools toolset
	// obs are the results of the conversation's tool calls, in the order
	// the calls were made; a call without a result reads as "".
	obs []string
	// promptBytes sizes the prompt for the usage count: every message's
	// text, the calls' names and arguments, and 16 bytes plus the name of
	// every declared tool.
	promptBytes int
}

// calls collects tool calls and their results as an API's messages show
// them, so that observations come out in call order whichever comes first.
type calls struct {
	order   []string
	results map[string]string
}

func (c *calls) call(id string) { c.order = append(c.order, id) }

func (c *calls) result(id, text string) {
	if c.results == nil {
		c.results = map[string]string{}
	}
	c.results[id] = text
}

func (c *calls) observations() []string {
	obs := make([]string, 0, len(c.order))
	for _, id := range c.order {
		obs = append(obs, c.results[id])
	}
	return obs
}

// chatConversation reads a chat-completions request.
func chatConversation(msgs []chatMessage, tools []chatTool) conversation {
	var c conversation
	var cs calls
	for _, m := range msgs {
		text := m.text()
		c.promptBytes += 4 + len(text)
		switch m.Role {
		case "user":
			c.user = append(c.user, text)
		case "tool":
			cs.result(m.ToolCallID, text)
		case "assistant":
			for _, tc := range m.ToolCalls {
				cs.call(tc.ID)
				c.promptBytes += len(tc.Function.Name) + len(tc.Function.Arguments)
			}
		}
	}
	c.obs = cs.observations()
	c.tools = make(toolset, len(tools))
	for _, t := range tools {
		c.declare(t.Function.Name, keys(t.Function.Parameters.Properties))
	}
	return c
}

func (c *conversation) declare(name string, params []string) {
	if c.tools == nil {
		c.tools = toolset{}
	}
	c.tools[name] = params
	c.promptBytes += 16 + len(name)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// turn is the scripted model's answer to one request, before any API
// encodes it.
type turn struct {
	move move
	// callID names the call, when the move is one: unique within the
	// conversation, as one call is made per model turn.
	callID string
	// input and output are the token counts: a quarter of the bytes, at
	// least one each.
	input, output int
}

// errUnknownIntent is the message for a conversation no intent matches.
const errUnknownIntent = "the scripted model knows no intent whose prompt is in the user message; it only plays the intents it was started with"

// decide returns the model's turn for c: the smoke check's answer, or the
// next move of the intent whose prompt the user gave. ok is false when no
// intent matches.
func (s *Server) decide(c conversation, prefix string) (t turn, in *intents.Intent, ok bool) {
	ji, judging := judgeQuestion(c.user)
	switch {
	case smoke(c.user):
		// The runner's smoke gate: a zero-tool run that must just answer.
		t.move = move{final: "ready"}
	case judging:
		t.move = move{final: verdict(ji)} // the scripted judge (judge.go)
	default:
		if in, ok = matchIntent(s.intents, c.user); !ok {
			return t, nil, false
		}
		t.move = next(in, c.tools, c.obs, strings.Join(c.user, "\n"))
	}
	if t.move.call != nil {
		t.callID = fmt.Sprintf("%s%d", prefix, len(c.obs)+1)
	}
	out := len(t.move.final)
	if t.move.call != nil {
		out += len(t.move.call.Name) + len(t.move.call.Arguments)
	}
	t.input, t.output = max(1, (c.promptBytes+3)/4), max(1, (out+3)/4)
	return t, in, true
}

// smoke reports whether the user gave the runner's smoke check.
func smoke(user []string) bool {
	for _, u := range user {
		if strings.Contains(u, runner.SmokePrompt) {
			return true
		}
	}
	return false
}
