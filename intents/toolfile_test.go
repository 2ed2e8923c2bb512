package intents

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const goodTool = `
const schema = { type: "object", properties: { author: { type: "string" } }, required: ["author"] };
({
  name: "find_books",
  title: "Find books",
  description: "Lists every book by an author, cheapest first.",
  inputSchema: schema,
  annotations: { readOnlyHint: true },
  urlPatterns: ["http://books.example/*"],
  async execute(input) {
    const r = await fetch("/api/books?author=" + encodeURIComponent(input.author));
    return await r.json();
  }
})`

func TestEvalToolReadsMetadata(t *testing.T) {
	tool, err := EvalTool(goodTool, ToolLimits{})
	require.NoError(t, err)
	assert.Equal(t, "find_books", tool.Name)
	assert.Equal(t, "Find books", tool.Title)
	assert.Equal(t, "Lists every book by an author, cheapest first.", tool.Description)
	assert.True(t, tool.ReadOnly)
	assert.Equal(t, []string{"http://books.example/*"}, tool.URLPatterns)
	assert.Equal(t, map[string]any{
		"type":       "object",
		"properties": map[string]any{"author": map[string]any{"type": "string"}},
		"required":   []any{"author"},
	}, tool.InputSchema)
	assert.Equal(t, goodTool, tool.Source)
}

func TestEvalToolMissingFieldsAreEmpty(t *testing.T) {
	tool, err := EvalTool(`({ execute() {} })`, ToolLimits{})
	require.NoError(t, err)
	assert.Empty(t, tool.Name)
	assert.Empty(t, tool.Description)
	assert.False(t, tool.ReadOnly)
	assert.Nil(t, tool.URLPatterns)
}

// hostile evaluates src with tight limits and returns the error message.
func hostile(t *testing.T, src string) (Tool, *ToolError) {
	t.Helper()
	start := time.Now()
	tool, err := EvalTool(src, ToolLimits{Time: 200 * time.Millisecond, Grace: 2 * time.Second, HeapGrowth: 64 << 20})
	assert.Less(t, time.Since(start), 2*time.Second, "evaluation must end near its time limit")
	if err == nil {
		return tool, nil
	}
	var te *ToolError
	require.True(t, errors.As(err, &te), "error %v must be a *ToolError", err)
	return tool, te
}

// setup makes code the statements of a tool file, before its literal.
func setup(code string) string { return code + ";\n({ execute() {} })" }

func TestEvalToolHostile(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"infinite loop", setup(`while (true) {}`), "time limit"},
		{"loop in object", `({ name: (function () { for (;;) {} })(), execute() {} })`, "time limit"},
		{"huge string by doubling", setup(`let s = "x"; for (;;) s += s;`), ""},
		{"huge array by pushing", setup(`const a = []; for (;;) a.push({ x: 1 });`), ""},
		{"repeat", setup(`"x".repeat(2 ** 30)`), "over the tool-file limit"},
		{"padEnd", setup(`"x".padEnd(2 ** 30)`), "over the tool-file limit"},
		{"fill on a long array", setup(`new Array(2 ** 31).fill(0)`), "over the tool-file limit"},
		{"map on a sparse array", setup(`new Array(1e9).map(x => x)`), "over the tool-file limit"},
		{"join on a sparse array", setup(`new Array(1e9).join("ab")`), "over the tool-file limit"},
		{"spread of a sparse array", setup(`Math.max(...new Array(1e9))`), "over the tool-file limit"},
		{"apply with a long array-like", setup(`Math.max.apply(null, { length: 1e9 })`), "over the tool-file limit"},
		{"Array.from", setup(`Array.from({ length: 1e9 })`), "over the tool-file limit"},
		{"stringify a sparse array", setup(`JSON.stringify({ a: new Array(1e9) })`), "over the tool-file limit"},
		{"typed array", setup(`new Uint8Array(2 ** 31)`), "Uint8Array is not defined"},
		{"array buffer", setup(`new ArrayBuffer(2 ** 31)`), "ArrayBuffer is not defined"},
		{"getter that loops", `({ get name() { for (;;) {} }, execute() {} })`, "name is a getter"},
		{"getter in a nested object", `({ name: "x", annotations: { get readOnlyHint() { return true } }, execute() {} })`, "readOnlyHint is a getter"},
		{"proxy as the tool", `new Proxy({}, { get() { for (;;) {} } })`, "must be the tool's object literal"},
		{"proxy as a field", `({ name: "x", inputSchema: new Proxy({}, { ownKeys() { for (;;) {} } }), execute() {} })`, "inputSchema is a Proxy"},
		{"proxy trap on descriptor", `new Proxy({ execute() {} }, { getOwnPropertyDescriptor() { for (;;) {} } })`, "must be the tool's object literal"},
		{"throws", setup(`throw new Error("boom")`), "tool file threw: Error: boom"},
		{"throws an object", setup(`throw { toString() { for (;;) {} } }`), "tool file threw: a thrown Object"},
		{"fetch absent", setup(`fetch("http://127.0.0.1:1/")`), "fetch is not defined"},
		{"require absent", setup(`require("fs")`), "require is not defined"},
		{"timers absent", setup(`setTimeout(() => {}, 0)`), "setTimeout is not defined"},
		{"console absent", setup(`console.log("x")`), "console is not defined"},
		{"not an object", `"just a string"`, "must be the tool's object literal"},
		{"no execute", `({ name: "x" })`, "execute must be a function"},
		{"name not a string", `({ name: 42, execute() {} })`, "name must be a string"},
		{"function in metadata", `({ name: "x", inputSchema: { type: function () {} }, execute() {} })`, "inputSchema.type is not plain data"},
		{"too many patterns", `({ name: "x", urlPatterns: Array.from({ length: 5000 }, () => "http://a/*"), execute() {} })`, "more than 1000 items"},
		{"syntax error", "({\n  name: 'x',\n  oops oops\n})", "syntax error"},
		{"cyclic schema", `const s = { type: "object" }; s.self = s; ({ name: "x", inputSchema: s, execute() {} })`, "nested too deeply"},
		{"readOnlyHint not a boolean", `({ name: "x", annotations: { readOnlyHint: "yes" }, execute() {} })`, "readOnlyHint must be true or false"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, te := hostile(t, tc.src)
			require.NotNil(t, te, "a hostile file must be refused")
			if tc.want == "" {
				assert.True(t, strings.Contains(te.Msg, "time limit") || strings.Contains(te.Msg, "memory"), "got %q", te.Msg)
				return
			}
			assert.Contains(t, te.Msg, tc.want)
		})
	}
}

func TestEvalToolErrorLines(t *testing.T) {
	_, err := EvalTool("({\n  name: 'x',\n  oops oops\n})", ToolLimits{})
	var te *ToolError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 3, te.Line)

	_, err = EvalTool("const a = 1;\n\nthrow new TypeError('bad');\n({ execute() {} })", ToolLimits{})
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 3, te.Line)
	assert.Equal(t, "tool file threw: TypeError: bad", te.Msg)
}

func TestEvalToolSourceLimit(t *testing.T) {
	src := "(" + strings.Repeat(" ", 300<<10) + "{ execute() {} })"
	_, err := EvalTool(src, ToolLimits{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the limit is 262144")
}

func TestEvalToolDoesNotLeakBetweenRuntimes(t *testing.T) {
	_, err := EvalTool(`globalThis.leak = 1; ({ name: "a", execute() {} })`, ToolLimits{})
	require.NoError(t, err)
	_, err = EvalTool(`if (typeof leak !== "undefined") throw new Error("leaked"); ({ name: "b", execute() {} })`, ToolLimits{})
	assert.NoError(t, err)
}

func BenchmarkEvalTool(b *testing.B) {
	for b.Loop() {
		if _, err := EvalTool(goodTool, ToolLimits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// A single built-in call under the wrappers' caps still ignores the
// interrupt until it returns (filling a million-element array takes about a
// second in goja); EvalTool gives up on it after the grace period.
func TestEvalToolAbandonsABuiltinThatIgnoresTheInterrupt(t *testing.T) {
	start := time.Now()
	_, err := EvalTool(`new Array(1048575).fill(0).fill(1).fill(2); ({ execute() {} })`,
		ToolLimits{Time: 50 * time.Millisecond, Grace: 100 * time.Millisecond})
	elapsed := time.Since(start)
	var te *ToolError
	require.ErrorAs(t, err, &te)
	assert.Contains(t, te.Msg, "abandoned")
	// The bound holds the evaluator's start too (tens of milliseconds, more
	// on a loaded machine); the three fills would take some 3 s.
	assert.Less(t, elapsed, 2*time.Second)
}

// TestEvalToolRefusesUnknownProperties reads tool files whose properties
// are misspelt: each would register a tool without its schema, or leave it
// unregistered, without a word; each is a problem naming the property.
func TestEvalToolRefusesUnknownProperties(t *testing.T) {
	for src, want := range map[string]string{
		`({ name: "a", description: "d", inputschema: { type: "object" }, execute() {} })`:       "unknown property inputschema: did you mean inputSchema?",
		`({ name: "a", description: "d", annotations: { readonlyHint: true }, execute() {} })`:   "unknown property annotations.readonlyHint: did you mean annotations.readOnlyHint?",
		`({ name: "a", description: "d", urlPattern: ["http://a/*"], execute() {} })`:            "unknown property urlPattern (known: name, title",
		`({ name: "a", description: "d", outputSchema: { type: "object" }, execute() {} })`:      "",
		`({ name: "a", description: "d", annotations: { openWorldHint: false }, execute() {} })`: "",
	} {
		_, err := EvalTool(src, ToolLimits{})
		if want == "" {
			assert.NoError(t, err, src)
			continue
		}
		assert.ErrorContains(t, err, want, src)
	}
}

// TestEvalToolPropertyErrorLines checks that a problem with one of the
// tool's properties is reported at the line the property is written on.
func TestEvalToolPropertyErrorLines(t *testing.T) {
	for src, line := range map[string]int{
		"({\n  name: 'a',\n  description: 'd',\n  title: 7,\n  execute() {},\n})":                                  4,
		"({\n  name: 'a',\n  description: 'd',\n  inputschema: {},\n  execute() {},\n})":                           4,
		"({\n  name: 'a',\n  description: 'd',\n  annotations: {\n    readOnlyHint: 'yes' },\n  execute() {},\n})": 4,
		"({\n  name: 'a',\n  description: 'd',\n  'urlPatterns': [\n    'x', 3],\n  execute() {},\n})":             4,
		"const e = 1;\n({\n  name: 'a',\n  description: 'd',\n  execute: e,\n})":                                   5,
		"({\n  name: 'a',\n  description: 'd',\n  get title() { return 'x' },\n  execute() {},\n})":                4,
		// Set by a spread or a computed key: the element that set it.
		"const common = { title: 7 };\n({\n  name: 'a',\n  description: 'd',\n  ...common,\n  execute() {},\n})": 5,
		"({\n  name: 'a',\n  description: 'd',\n  ['ti' + 'tle']: 7,\n  execute() {},\n})":                       4,
	} {
		_, err := EvalTool(src, ToolLimits{})
		var te *ToolError
		require.ErrorAs(t, err, &te, src)
		assert.Equal(t, line, te.Line, "%s: %v", src, err)
	}
}
