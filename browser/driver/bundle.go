package driver

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/pairbench/pairbench/intents"
)

// The page-side scripts. Each file is one function expression; Go calls it
// with JSON-encoded arguments.
var (
	//go:embed polyfill/webmcp-polyfill.iife.js
	polyfillJS string
	//go:embed js/match.js
	matchJS string
	//go:embed js/header.js
	headerJS string
	//go:embed js/tool.js
	toolJS string
	//go:embed js/list.js
	listJS string
	//go:embed js/invoke.js
	invokeJS string
)

// toolScript is one tool file's script.
type toolScript struct {
	name, file, script string
}

// bundle returns the scripts that register tools on every new document: the
// registry (the polyfill when polyfill is set, and the URL guard), which
// must be added first, and one script per tool file. Without the polyfill
// the tools register with the browser's own document.modelContext. Each tool file is its own script, so a file the browser
// cannot compile costs only that tool (the registry reports it missing).
//
// A tool file's script holds its page form (intents.Tool.Function) and hands
// it to the registry:
//
//	{ const make = (pairbench$tool) => {FILE ... };
//	(function pairbenchTool(...) {...})(mark, meta, make); }
//	//# sourceURL=pairbench-tool:domains/books.example/tools/list_genre.js
//
// The page form starts on the script's first line, so line N of the script
// is line N of the file, in the browser's messages and stacks as in
// validate's. Nothing is evaluated from a string in the page.
func bundle(mark string, tools []intents.Tool, polyfill bool) (registry string, scripts []toolScript, err error) {
	markJSON := jsonString(mark)
	// expect is the metadata pairbench read; the page refuses a tool whose
	// file builds other metadata there.
	type expect struct {
		Name        string         `json:"name"`
		Title       string         `json:"title"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"inputSchema"`
		ReadOnly    bool           `json:"readOnlyHint"`
	}
	type meta struct {
		Name      string   `json:"name"`
		File      string   `json:"file"`
		Patterns  []string `json:"patterns"`
		SourceURL string   `json:"sourceURL"`
		Expect    expect   `json:"expect"`
	}
	metas := make([]meta, 0, len(tools))
	for _, t := range tools {
		if len(t.URLPatterns) == 0 {
			return "", nil, fmt.Errorf("tool %s has no URL patterns", t.Name)
		}
		if strings.TrimSpace(t.Function) == "" {
			return "", nil, fmt.Errorf("tool %s has no page form (tools come from intents.EvalTool)", t.Name)
		}
		if slices.ContainsFunc(metas, func(m meta) bool { return m.Name == t.Name }) {
			return "", nil, fmt.Errorf("tool %s is given twice", t.Name)
		}
		m := meta{Name: t.Name, File: toolFile(t), Patterns: t.URLPatterns,
			Expect: expect{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, ReadOnly: t.ReadOnly}}
		m.SourceURL = "pairbench-tool:" + (&url.URL{Path: m.File}).EscapedPath()
		mj, err := json.Marshal(m)
		if err != nil {
			return "", nil, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		metas = append(metas, m)
		scripts = append(scripts, toolScript{name: t.Name, file: m.File, script: "{ const make = " + t.Function + ";\n" +
			strings.TrimSpace(toolJS) + "(" + markJSON + ", " + string(mj) + ", make); }\n" +
			"//# sourceURL=" + m.SourceURL + "\n"})
	}
	expected, err := json.Marshal(metas)
	if err != nil {
		return "", nil, err
	}
	install := ""
	if polyfill {
		install = polyfillJS
	}
	registry = headerJS + "(" + markJSON + ", " + strings.TrimSpace(matchJS) + ", function () {\n" + install + "\n}, " + string(expected) + ");"
	return registry, scripts, nil
}

// toolFile names a tool's file in the page and in failures: its path in the
// registry, else where it was read, else its name.
func toolFile(t intents.Tool) string {
	switch {
	case t.Path != "":
		return t.Path
	case t.File != "":
		return t.File
	}
	return t.Name + ".js"
}

// call returns the expression that calls the function expression fn with
// args, each encoded as JSON.
func call(fn string, args ...any) (string, error) {
	var b strings.Builder
	b.WriteString(fn)
	b.WriteString("(")
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		j, err := json.Marshal(a)
		if err != nil {
			return "", fmt.Errorf("encode argument %d: %w", i, err)
		}
		b.Write(j)
	}
	b.WriteString(")")
	return b.String(), nil
}

func jsonString(s string) string {
	j, _ := json.Marshal(s) // a string always encodes
	return string(j)
}
