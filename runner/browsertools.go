package runner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pairbench/pairbench/intents"
)

// BrowserToolArgs are the arguments of each of BrowserTools, as the pinned
// Playwright MCP declares them (a test of agent/launch reads them from
// it): every property, and the required ones.
var BrowserToolArgs = map[string]ToolArgs{
	"browser_navigate":        {Known: []string{"url"}, Required: []string{"url"}},
	"browser_navigate_back":   {},
	"browser_snapshot":        {Known: []string{"boxes", "depth", "filename", "target"}},
	"browser_find":            {Known: []string{"filename", "regex", "text"}},
	"browser_click":           {Known: []string{"button", "doubleClick", "element", "modifiers", "target"}, Required: []string{"target"}},
	"browser_type":            {Known: []string{"element", "slowly", "submit", "target", "text"}, Required: []string{"target", "text"}},
	"browser_fill_form":       {Known: []string{"fields"}, Required: []string{"fields"}},
	"browser_select_option":   {Known: []string{"element", "target", "values"}, Required: []string{"target", "values"}},
	"browser_press_key":       {Known: []string{"key"}, Required: []string{"key"}},
	"browser_hover":           {Known: []string{"element", "target"}, Required: []string{"target"}},
	"browser_wait_for":        {Known: []string{"text", "textGone", "time"}},
	"browser_tabs":            {Known: []string{"action", "index", "url"}, Required: []string{"action"}},
	"browser_take_screenshot": {Known: []string{"element", "filename", "fullPage", "scale", "target", "type"}, Required: []string{"scale"}},
	"browser_handle_dialog":   {Known: []string{"accept", "promptText"}, Required: []string{"accept"}},
}

// ToolArgs are one browser tool's argument names.
type ToolArgs struct {
	Known, Required []string
}

// A baseline step names the element it acts on in words ("element":
// "Author"); the agent (the scripted model too) finds its "target" ref in
// the page's snapshot. So a step with an element needs no target.
const (
	elementArg = "element"
	targetArg  = "target"
)

// CheckBaselineSteps checks every intent's baseline steps against the
// browser tools an agent is given: a tool that is not one of BrowserTools,
// an argument the tool does not take, or a required one missing (target
// may be given as element) is a problem at the step's line. A step the
// agent cannot take would leave the control arm's baseline short, and the
// scripted model's control wrong for the registry's fault.
func CheckBaselineSteps(reg *intents.Registry) intents.Problems {
	var out intents.Problems
	for _, in := range reg.Intents {
		for _, st := range in.Baseline.Steps {
			out = append(out, checkStep(st)...)
		}
	}
	return out
}

func checkStep(st intents.Step) intents.Problems {
	args, ok := BrowserToolArgs[st.Tool]
	if !ok {
		msg := fmt.Sprintf("baseline step: %q is not a browser tool", st.Tool)
		if near := nearest(st.Tool, BrowserTools); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", near)
		}
		return intents.Problems{{Pos: st.Pos, Msg: msg + "; the tools are " + strings.Join(BrowserTools, ", ")}}
	}
	var out intents.Problems
	for _, name := range slices.Sorted(maps.Keys(st.Args)) {
		if slices.Contains(args.Known, name) {
			continue
		}
		msg := fmt.Sprintf("baseline step %s: no argument %q", st.Tool, name)
		if near := nearest(name, args.Known); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", near)
		}
		if len(args.Known) == 0 {
			msg += "; it takes none"
		} else {
			msg += "; it takes " + strings.Join(args.Known, ", ")
		}
		out = append(out, intents.Problem{Pos: st.Pos, Msg: msg})
	}
	for _, name := range args.Required {
		if _, ok := st.Args[name]; ok {
			continue
		}
		if name == targetArg {
			if _, ok := st.Args[elementArg]; ok {
				continue
			}
			out = append(out, intents.Problem{Pos: st.Pos, Msg: fmt.Sprintf("baseline step %s: no %s: name the element it acts on (element: the words on the page)", st.Tool, elementArg)})
			continue
		}
		out = append(out, intents.Problem{Pos: st.Pos, Msg: fmt.Sprintf("baseline step %s: argument %q is required", st.Tool, name)})
	}
	return out
}

// nearest returns the name of names closest to s, when it is a likely
// misspelling (an edit distance of at most a third of its length), else "".
func nearest(s string, names []string) string {
	best, bestD := "", len(s)/3+1
	for _, n := range names {
		if d := editDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
