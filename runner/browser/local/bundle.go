package local

import (
	_ "embed"
	"encoding/json"
	"fmt"
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

// bundle returns the scripts that register tools on every new document, in
// the order they must be added: the registry (polyfill + URL guard) first,
// then one script per tool file. Each tool file is its own script, so a file
// that does not parse costs only that tool.
func bundle(mark string, tools []intents.Tool) ([]string, error) {
	markJSON := jsonString(mark)
	scripts := []string{
		headerJS + "(" + markJSON + ", " + strings.TrimSpace(matchJS) + ", function () {\n" + polyfillJS + "\n});",
	}
	for _, t := range tools {
		if len(t.URLPatterns) == 0 {
			return nil, fmt.Errorf("tool %s has no URL patterns", t.Name)
		}
		if strings.TrimSpace(t.Source) == "" {
			return nil, fmt.Errorf("tool %s has no source", t.Name)
		}
		patterns, err := json.Marshal(t.URLPatterns)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		// The source is one expression (an object literal); the newlines keep
		// a trailing line comment from swallowing the closing parenthesis.
		scripts = append(scripts, toolJS+"("+markJSON+", "+string(patterns)+", () => (\n"+expression(t.Source)+"\n));")
	}
	return scripts, nil
}

// expression trims a tool file to its expression: surrounding space and any
// trailing semicolons, which may not appear inside parentheses.
func expression(src string) string {
	return strings.TrimRight(strings.TrimSpace(src), "; \t\r\n")
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
