package model

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/pairbench/pairbench/intents"
)

// The script: how the scripted model decides its next move from the
// conversation so far. It keeps no state between requests; the same
// conversation always gives the same move.
//
// For an intent it
//
//  1. calls the webmcp tool with {"action":"list"}, when the request declares
//     a tool named webmcp (or ending in "__webmcp");
//  2. when the list names the intent's entry tool, invokes it with the
//     baseline's tool_args and answers from its result, unless the result is
//     an error;
//  3. otherwise takes the baseline's steps in order, each with the declared
//     tool whose name is the step's tool or ends in "__" + the step's tool
//     (steps whose tool is not declared are skipped), and answers from what
//     the steps returned. A step that names an element (args.element)
//     without its ref gets the ref of that element in the latest page
//     snapshot (sent as "target", or "ref" when the tool declares that), as
//     an agent reads refs off a snapshot; when the last call was not a
//     snapshot (Playwright MCP's navigate, type and click only link to one)
//     the model first calls browser_snapshot. After the last step it takes
//     one more snapshot, unless the last call was one, to read the page it
//     ends on.
//
// When the user's message (a context pack's notes, docs/registry.md) names
// the URL of a browser_navigate step after the first, the page steps start
// there: the model goes straight to the page the notes point at, as an
// agent told the route would.
//
// Booleans and nulls count as read once anything was read; a list's length
// counts as read when the list was.
//
// The answer is the baseline answer filtered by what the tools returned: a
// value the model never read is left out (null in an object, dropped from a
// list), so a page that does not show the answer yields a wrong answer rather
// than a memorised right one.

// move is the model's next message: one tool call, or the final text.
type move struct {
	call  *functionCall
	final string
}

// toolset maps each tool the request declares to its parameter names.
type toolset map[string][]string

// find returns the declared tool that is want, or ends in "__"+want.
func (ts toolset) find(want string) string {
	if want == "" {
		return ""
	}
	if _, ok := ts[want]; ok {
		return want
	}
	var found []string
	for t := range ts {
		if strings.HasSuffix(t, "__"+want) {
			found = append(found, t)
		}
	}
	slices.Sort(found) // deterministic when two servers offer the tool
	if len(found) == 0 {
		return ""
	}
	return found[0]
}

// next returns the scripted agent's move for intent in, given the tools the
// request declares, the results it has observed so far and the user's text.
func next(in *intents.Intent, tools toolset, obs []string, user string) move {
	k := 0 // observations consumed by the plan so far
	if webmcp := tools.find("webmcp"); webmcp != "" {
		if k == len(obs) {
			return callMove(webmcp, map[string]any{"action": "list"})
		}
		listed := in.EntryTool != "" && lists(obs[k], in.EntryTool)
		k++
		if listed {
			if k == len(obs) {
				args := in.Baseline.ToolArgs
				if args == nil {
					args = map[string]any{}
				}
				return callMove(webmcp, map[string]any{"action": "invoke", "tool": in.EntryTool, "arguments": args})
			}
			res := obs[k]
			k++
			// A competent agent answers from the tool when the tool holds the
			// answer, and otherwise goes on to the page.
			if !failed(res, in.EntryTool) && complete(in, res) {
				return move{final: finalAnswer(in, "the page's "+in.EntryTool+" tool", []string{res})}
			}
		}
	}
	// Playwright MCP's navigate, type and click return only a link to the
	// page's snapshot, so the model takes one itself when it needs to read
	// the page and the last call was not a snapshot.
	snapshot := tools.find("browser_snapshot")
	justSnapped := false
	var read []string
	took := false
	for _, st := range route(in.Baseline.Steps, user) {
		name := tools.find(st.Tool)
		if name == "" {
			continue
		}
		if needsTarget(st.Args) && snapshot != "" && !justSnapped {
			if k == len(obs) {
				return callMove(snapshot, map[string]any{})
			}
			read = append(read, obs[k])
			k++
		}
		if k == len(obs) {
			return callMove(name, withTarget(st.Args, tools[name], obs))
		}
		read = append(read, obs[k])
		k++
		took, justSnapped = true, name == snapshot
	}
	if took && snapshot != "" && !justSnapped {
		// Read the page the last step left before answering.
		if k == len(obs) {
			return callMove(snapshot, map[string]any{})
		}
		read = append(read, obs[k])
	}
	return move{final: finalAnswer(in, "the page", read)}
}

// route returns the steps from the last browser_navigate step, after the
// first step, whose URL user names; all of them when it names none.
func route(steps []intents.Step, user string) []intents.Step {
	for i := len(steps) - 1; i > 0; i-- {
		url, _ := steps[i].Args["url"].(string)
		if steps[i].Tool == "browser_navigate" && url != "" && strings.Contains(user, url) {
			return steps[i:]
		}
	}
	return steps
}

// The argument names Playwright MCP versions give an element's snapshot ref:
// "target" (0.0.83, which also takes a selector there) and "ref" (earlier).
const (
	targetKey = "target"
	refKey    = "ref"
)

// needsTarget reports whether a step names an element but not its ref.
func needsTarget(args map[string]any) bool {
	element, named := args["element"].(string)
	if !named || element == "" {
		return false
	}
	_, hasTarget := args[targetKey]
	_, hasRef := args[refKey]
	return !hasTarget && !hasRef
}

// withTarget returns a step's arguments ready for the tool whose parameters
// are params. A step that names an element but no ref gets the element's ref
// from the latest snapshot in obs, under the name the tool declares (target,
// else ref); a ref given under the other name is renamed. When no snapshot
// shows the element the step goes without one, and the browser tool's error
// is what the model reads.
func withTarget(args map[string]any, params []string, obs []string) map[string]any {
	out := make(map[string]any, len(args)+1)
	for k, v := range args {
		out[k] = v
	}
	key, other := targetKey, refKey
	if !slices.Contains(params, targetKey) && slices.Contains(params, refKey) {
		key, other = refKey, targetKey
	}
	if v, ok := out[other]; ok && !slices.Contains(params, other) {
		delete(out, other)
		out[key] = v
	}
	if !needsTarget(out) {
		return out
	}
	element := out["element"].(string)
	for i := len(obs) - 1; i >= 0; i-- {
		if !strings.Contains(obs[i], "[ref=") {
			continue
		}
		if ref, ok := findRef(obs[i], element); ok {
			out[key] = ref
		}
		break // only the latest snapshot's refs are valid
	}
	return out
}

// snapshotLine matches one node of a Playwright aria snapshot:
// `- role "name" [attr] [ref=e12]`, capturing the quoted name and the ref.
var snapshotLine = regexp.MustCompile(`^\s*- [^\s"]+(?: ("(?:[^"\\]|\\.)*"))?.*\[ref=([^\]\s]+)\]`)

// findRef returns the ref of the first node in snapshot whose accessible
// name is element (case and white space aside), else of the first whose name
// contains it.
func findRef(snapshot, element string) (string, bool) {
	want := normText(element)
	contains := ""
	for _, line := range strings.Split(snapshot, "\n") {
		m := snapshotLine.FindStringSubmatch(line)
		if m == nil || m[1] == "" {
			continue
		}
		var name string
		if json.Unmarshal([]byte(m[1]), &name) != nil {
			continue
		}
		switch n := normText(name); {
		case n == want:
			return m[2], true
		case contains == "" && strings.Contains(n, want):
			contains = m[2]
		}
	}
	return contains, contains != ""
}

func callMove(name string, args map[string]any) move {
	b, err := json.Marshal(args)
	if err != nil {
		// Arguments come from a validated intent and are JSON by
		// construction; say so in the call rather than fail the request.
		b = []byte(fmt.Sprintf(`{"error": %q}`, err.Error()))
	}
	return move{call: &functionCall{Name: name, Arguments: string(b)}}
}

// lists reports whether a webmcp list result names tool: as a "name" field
// anywhere in its JSON, or, for a result that is not JSON, as a whole word.
func lists(result, tool string) bool {
	var v any
	if json.Unmarshal([]byte(result), &v) == nil {
		return hasName(v, tool)
	}
	re := regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(tool) + `($|[^\w-])`)
	return re.MatchString(result)
}

func hasName(v any, name string) bool {
	switch x := v.(type) {
	case map[string]any:
		if n, ok := x["name"].(string); ok && n == name {
			return true
		}
		for _, e := range x {
			if hasName(e, name) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasName(e, name) {
				return true
			}
		}
	}
	return false
}

// failed reports whether the result of invoking tool reads as a failure:
// empty, a JSON object with status "error", isError true or a non-empty
// error, or text that starts with "error", "webmcp:" (pairbench's webmcp
// tool reporting it could not run the tool) or "TOOL failed:", or says the
// tool returned an error (pi's text for an MCP error without content).
func failed(result, tool string) bool {
	t := strings.TrimSpace(result)
	if t == "" {
		return true
	}
	var obj map[string]any
	if json.Unmarshal([]byte(t), &obj) == nil && obj != nil {
		if obj["status"] == "error" || obj["isError"] == true {
			return true
		}
		switch e := obj["error"].(type) {
		case string:
			return e != ""
		case map[string]any:
			return len(e) > 0
		}
		return false
	}
	lower := strings.ToLower(t)
	return strings.HasPrefix(lower, "error") || strings.HasPrefix(lower, "webmcp:") ||
		strings.HasPrefix(lower, strings.ToLower(tool)+" failed:") || strings.Contains(lower, "returned an error")
}

// complete reports whether every value of the intent's baseline answer
// appears in the text read.
func complete(in *intents.Intent, read ...string) bool {
	_, missing := filterAnswer(in.Baseline.Answer, newCorpus(read), "")
	return len(missing) == 0
}

// finalAnswer writes the final message: a sentence and a fenced JSON answer
// holding what of the baseline answer the model read.
func finalAnswer(in *intents.Intent, source string, read []string) string {
	c := newCorpus(read)
	answer, missing := filterAnswer(in.Baseline.Answer, c, "")
	b, err := json.MarshalIndent(answer, "", "  ")
	if err != nil {
		b = []byte("{}")
	}
	var sentence string
	if len(missing) == 0 {
		sentence = fmt.Sprintf("I found the answer using %s.", source)
	} else {
		sentence = fmt.Sprintf("Using %s I could not find %s; here is what I found.", source, strings.Join(missing, ", "))
	}
	return sentence + "\n\n```json\n" + string(b) + "\n```"
}

// filterAnswer keeps the values of want that appear in c: a scalar not found
// becomes null in an object and is dropped from a list; missing lists their
// paths, in key order.
func filterAnswer(want map[string]any, c corpus, path string) (map[string]any, []string) {
	out := make(map[string]any, len(want))
	var missing []string
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, m := filterValue(want[k], c, join(path, k))
		out[k] = v
		missing = append(missing, m...)
	}
	return out, missing
}

func filterValue(v any, c corpus, path string) (any, []string) {
	switch x := v.(type) {
	case map[string]any:
		return filterAnswer(x, c, path)
	case []any:
		kept := []any{}
		var missing []string
		for i, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				fe, m := filterValue(e, c, join(path, strconv.Itoa(i)))
				kept = append(kept, fe)
				missing = append(missing, m...)
			default:
				if c.has(e) {
					kept = append(kept, e)
				} else {
					missing = append(missing, join(path, strconv.Itoa(i)))
				}
			}
		}
		return kept, missing
	default:
		if c.has(v) {
			return v, nil
		}
		return nil, []string{path}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// corpus is everything the model read, lower-cased with white space
// collapsed: the raw results plus, for results that are JSON, their string
// and number leaves (so escaped text is searchable too) and the length of
// every list (so a count can be answered from a list).
type corpus string

func newCorpus(read []string) corpus {
	var b strings.Builder
	for _, r := range read {
		b.WriteString(r)
		b.WriteByte('\n')
		var v any
		if json.Unmarshal([]byte(r), &v) == nil {
			leaves(v, &b)
		}
	}
	return corpus(normText(b.String()))
}

func leaves(v any, b *strings.Builder) {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			leaves(e, b)
		}
	case []any:
		// A competent agent counts what it is shown.
		b.WriteString(strconv.Itoa(len(x)))
		b.WriteByte('\n')
		for _, e := range x {
			leaves(e, b)
		}
	case string:
		b.WriteString(x)
		b.WriteByte('\n')
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'f', -1, 64))
		b.WriteByte('\n')
	}
}

func normText(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

// has reports whether the model read v. Strings must appear (case and white
// space aside), or, for a string like "$12.50", its amount "12.50" must
// appear as a number. Numbers must appear as a number in one of their usual
// spellings (12.5, 12.50, 1234, 1,234, 1,234.50). Booleans and null count as read when
// anything was read at all, since pages rarely spell them.
func (c corpus) has(v any) bool {
	switch x := v.(type) {
	case string:
		n := normText(x)
		if n == "" || strings.Contains(string(c), n) {
			return true
		}
		core := strings.TrimFunc(n, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		return core != "" && core != n && c.hasNumber(core)
	case bool, nil:
		return c != ""
	}
	f, ok := toFloat(v)
	if !ok {
		return false
	}
	var spellings []string
	for _, s := range []string{strconv.FormatFloat(f, 'f', -1, 64), strconv.FormatFloat(f, 'f', 2, 64)} {
		spellings = append(spellings, s, groupThousands(s))
	}
	return slices.ContainsFunc(spellings, c.hasNumber)
}

// hasNumber reports whether s appears in c not as part of a longer number.
func (c corpus) hasNumber(s string) bool {
	text := string(c)
	for i := 0; ; {
		j := strings.Index(text[i:], s)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(s)
		if !digitAround(text, start-1, -1) && !digitAround(text, end, 1) {
			return true
		}
		i = start + 1
	}
}

// digitAround reports whether the number at text[at] continues in direction
// dir: a digit, or a '.' or ',' followed (in that direction) by a digit.
func digitAround(text string, at, dir int) bool {
	if at < 0 || at >= len(text) {
		return false
	}
	ch := text[at]
	if ch >= '0' && ch <= '9' {
		return true
	}
	if ch == '.' || ch == ',' {
		n := at + dir
		return n >= 0 && n < len(text) && text[n] >= '0' && text[n] <= '9'
	}
	return false
}

// groupThousands puts commas between the thousands of a decimal number's
// integer part: "-1234567.5" becomes "-1,234,567.5".
func groupThousands(num string) string {
	sign, rest := "", num
	if strings.HasPrefix(rest, "-") {
		sign, rest = "-", rest[1:]
	}
	intPart, frac, hasFrac := strings.Cut(rest, ".")
	var b strings.Builder
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if hasFrac {
		return sign + b.String() + "." + frac
	}
	return sign + b.String()
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// matchIntent finds the intent whose prompt appears in the conversation's
// user messages (white space aside); when several do, the longest prompt
// wins, so a prompt that extends another is told apart.
func matchIntent(all []intents.Intent, user []string) (*intents.Intent, bool) {
	text := strings.Join(strings.Fields(strings.Join(user, "\n")), " ")
	var best *intents.Intent
	bestLen := 0
	for i := range all {
		p := strings.Join(strings.Fields(all[i].Prompt), " ")
		if p != "" && strings.Contains(text, p) && len(p) > bestLen {
			best, bestLen = &all[i], len(p)
		}
	}
	return best, best != nil
}
