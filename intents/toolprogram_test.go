package intents

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// literal is a complete tool, for building files around.
const literal = `({
  name: "t",
  description: "A test tool.",
  urlPatterns: ["http://a.test/*"],
  execute() { return { ok: true }; }
})`

// toolFileForm is one way a user may write a tool file that pairbench
// refuses, and where and why.
type toolFileForm struct {
	name, src string
	line      int
	msg       string
}

var refusedForms = []toolFileForm{
	{"export default", "export default {\n  name: \"t\",\n  execute() {}\n}", 1, "not an ES module"},
	{"import", "import { x } from \"./x.js\";\n" + literal, 1, "cannot import"},
	{"module.exports", "module.exports = {\n  name: \"t\",\n  execute() {}\n};", 1, "not a CommonJS module"},
	{"a function declaration last", literal + ";\nfunction helper() {}\n", 7, "ends in a function declaration"},
	{"two tools", literal + ";\n" + literal, 1, "defines one tool"},
	{"a comma expression", "(1, " + literal[1:], 1, "comma expression"},
	{"a name for the tool", "const tool = " + literal[1:len(literal)-1] + ";\ntool;", 7, "not a name for it"},
	{"no parentheses", "const a = 1;\n" + literal[1:len(literal)-1], 4, "line 2 starts a statement, so it is read as a block"},
	{"a missing semicolon before the literal", "const GENRES = [\"poetry\"]\n" + literal, 1, "end line 1 with a semicolon"},
	{"a return", "return " + literal[1:len(literal)-1] + ";", 1, "does not return its tool"},
	{"a #! line", "#!/usr/bin/env node\n" + literal, 1, "remove the #! line"},
	{"strict-mode early error", "\"use strict\";\nwith (Math) {}\n" + literal, 2, "syntax error: Strict mode code may not include a with statement"},
	{"strict-mode assignment to an undeclared name", "\"use strict\";\n\nhelper = 1;\n" + literal, 3, "ReferenceError: helper is not defined"},
	{"a page object at the top level", "const here = location.href;\n" + literal, 1, "use location inside execute"},
	{"an empty file", "// nothing yet\n", 1, "has no tool"},
	{"the page form's name", "const pairbench$tool = 1;\n" + literal, 1, "pairbench$tool is the name"},
	{"an async generator goja cannot parse", "async function* pages() {}\n" + literal, 1, "syntax error"},
}

// AcceptedForms returns the documented tool-file forms: the files in
// testdata/toolforms (which browser/toolcheck registers in Chromium too) and
// variants of them that only differ in bytes a file may carry.
func acceptedForms(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "toolforms", "*.js"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	forms := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		forms[strings.TrimSuffix(filepath.Base(f), ".js")] = string(b)
	}
	plain := forms["literal"]
	forms["crlf"] = strings.ReplaceAll(plain, "\n", "\r\n")
	forms["byte_order_mark"] = "\ufeff" + plain
	forms["source_map_comment"] = plain + "//# sourceMappingURL=data:application/json;base64,e30="
	return forms
}

func TestToolFileForms(t *testing.T) {
	for name, src := range acceptedForms(t) {
		t.Run(name, func(t *testing.T) {
			tool, err := EvalTool(src, ToolLimits{})
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(tool.Name, "form_"), tool.Name)
			assert.NotEmpty(t, tool.URLPatterns)
			assert.Equal(t, src, tool.Source)
			assert.Equal(t, strings.Count(src, "\n")+2, strings.Count(tool.Function, "\n"),
				"the page form adds two lines after the file and none before it")
		})
	}
	for _, f := range refusedForms {
		t.Run(f.name, func(t *testing.T) {
			_, err := EvalTool(f.src, ToolLimits{Time: time.Second})
			var te *ToolError
			require.ErrorAs(t, err, &te)
			assert.Contains(t, te.Msg, f.msg)
			assert.Equal(t, f.line, te.Line, te.Msg)
		})
	}
}

// TestPageFormRunsTheFileAsAFunctionBody calls the page form outside
// EvalTool, as the page does, and checks what it keeps to itself.
func TestPageFormRunsTheFileAsAFunctionBody(t *testing.T) {
	src := "\"use strict\";\nvar shared = 1;\nfunction helper() { return this; }\n" + literal
	tool, err := EvalTool(src, ToolLimits{})
	require.NoError(t, err)
	vm := goja.New()
	v, err := vm.RunString("const make = " + tool.Function + ";\n" +
		`const a = make(), b = make();
		 [a.name, a === b, typeof shared, typeof helper, typeof pairbench$tool].join(" ")`)
	require.NoError(t, err)
	assert.Equal(t, "t false undefined undefined undefined", v.String(),
		"each call builds a new tool; the file's names stay inside the function")

	_, err = vm.RunString("(" + tool.Function + ").call({})")
	require.NoError(t, err, "the page form needs no this")
}

// TestErrorLinesPointIntoTheFile checks that the lines of runtime errors,
// counted in the page form, are the file's.
func TestErrorLinesPointIntoTheFile(t *testing.T) {
	for _, tc := range []struct {
		src  string
		line int
	}{
		{"const a = 1;\n\nthrow new TypeError('bad');\n" + literal, 3},
		{literal[:len(literal)-1] + ",\n  title: undefinedName,\n})", 7},
		{"\"use strict\";\nconst x = 1;\nx = 2;\n" + literal, 3},
	} {
		_, err := EvalTool(tc.src, ToolLimits{})
		var te *ToolError
		require.ErrorAs(t, err, &te, tc.src)
		assert.Equal(t, tc.line, te.Line, te.Msg)
	}
}

// TestSourceMapCommentsReadNoHostFile is the attack a sourceMappingURL
// comment made: goja's parser read the file it named from the host, so
// /dev/zero grew the heap until the process died, and a FIFO blocked it
// forever.
func TestSourceMapCommentsReadNoHostFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "map")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	for _, target := range []string{"/dev/zero", fifo} {
		rel, err := filepath.Rel(mustGetwd(t), target)
		require.NoError(t, err)
		src := literal + "\n//# sourceMappingURL=" + rel
		done := make(chan error, 1)
		go func() {
			_, err := EvalTool(src, ToolLimits{})
			done <- err
		}()
		select {
		case err := <-done:
			assert.NoError(t, err, target)
		case <-time.After(5 * time.Second):
			// Unblock the reader so the test binary can end.
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			t.Fatalf("reading a tool file that names %s as its source map did not finish", target)
		}
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return wd
}

// TestExampleRegistryKeepsEveryToolForm holds the example registry, which
// the demo and the whole-registry bench run in Chromium, to one tool file of
// each documented form, so that each stays covered end to end.
func TestExampleRegistryKeepsEveryToolForm(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(exampleRegistry, "domains", "*", "tools", "*.js"))
	require.NoError(t, err)
	forms := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		prog, err := parseScript(string(b))
		require.NoError(t, err, f)
		name := filepath.Base(f)
		if len(prog.Body) == 1 {
			forms["one object literal"] = append(forms["one object literal"], name)
		}
		for _, s := range prog.Body[:len(prog.Body)-1] {
			switch s := s.(type) {
			case *ast.FunctionDeclaration:
				if s.Function.Async {
					forms["an async helper"] = append(forms["an async helper"], name)
				} else {
					forms["helper statements"] = append(forms["helper statements"], name)
				}
			case *ast.LexicalDeclaration:
				if s.Token == token.CONST {
					forms["a shared constant"] = append(forms["a shared constant"], name)
				}
			}
		}
	}
	for _, form := range []string{"one object literal", "helper statements", "a shared constant", "an async helper"} {
		assert.NotEmpty(t, forms[form], "no example tool file is of the form %q", form)
	}
}
