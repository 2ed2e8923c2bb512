// Command prune cuts GitHub's REST description (api.github.com.json from npm
// @octokit/openapi) down to the operations a list names, keeping every
// component those operations reference and nothing else. Examples are
// dropped: the fake GitHub does not validate them.
//
//	go run ./bot/githubtest/internal/prune \
//	  -spec /tmp/octo/node_modules/@octokit/openapi/generated/api.github.com.json \
//	  -ops bot/githubtest/testdata/operations.txt \
//	  -out bot/githubtest/testdata/api.github.com.json
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	spec := flag.String("spec", "", "GitHub's full REST description (JSON)")
	ops := flag.String("ops", "", `file listing "METHOD /path" operations to keep`)
	out := flag.String("out", "", "where to write the pruned description")
	flag.Parse()
	if err := run(*spec, *ops, *out); err != nil {
		fmt.Fprintln(os.Stderr, "prune:", err)
		os.Exit(1)
	}
}

func run(specFile, opsFile, outFile string) error {
	if specFile == "" || opsFile == "" || outFile == "" {
		return fmt.Errorf("-spec, -ops and -out are required")
	}
	data, err := os.ReadFile(specFile)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", specFile, err)
	}
	wanted, err := readOps(opsFile)
	if err != nil {
		return err
	}
	pruned, err := prune(doc, wanted)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(pruned); err != nil {
		return err
	}
	return os.WriteFile(outFile, buf.Bytes(), 0o644)
}

// readOps reads "METHOD /path" lines, skipping blanks and # comments.
func readOps(file string) (map[string][]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ops := map[string][]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		method, path, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want METHOD /path", file, n)
		}
		ops[path] = append(ops[path], strings.ToLower(method))
	}
	return ops, sc.Err()
}

// prune returns a copy of doc with only the wanted operations and the
// components they reach through $ref, transitively.
func prune(doc map[string]any, wanted map[string][]string) (map[string]any, error) {
	paths, _ := doc["paths"].(map[string]any)
	components, _ := doc["components"].(map[string]any)
	keptPaths := map[string]any{}
	for path, methods := range wanted {
		item, ok := paths[path].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("no path %s", path)
		}
		kept := map[string]any{}
		if ps, ok := item["parameters"]; ok {
			kept["parameters"] = ps
		}
		for _, m := range methods {
			op, ok := item[m].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("no operation %s %s", strings.ToUpper(m), path)
			}
			kept[m] = op
		}
		keptPaths[path] = dropExamples(kept)
	}

	keptComponents := map[string]any{}
	var visit func(v any)
	visit = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				addRef(ref, components, keptComponents, visit)
			}
			for _, x := range v {
				visit(x)
			}
		case []any:
			for _, x := range v {
				visit(x)
			}
		}
	}
	visit(keptPaths)

	out := map[string]any{"paths": keptPaths, "components": keptComponents}
	for _, k := range []string{"openapi", "info", "servers", "tags", "externalDocs"} {
		if v, ok := doc[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

// addRef copies the component ref points to ("#/components/KIND/NAME") into
// kept, once, and visits it for further references.
func addRef(ref string, from, kept map[string]any, visit func(any)) {
	kind, name, ok := strings.Cut(strings.TrimPrefix(ref, "#/components/"), "/")
	if !ok {
		return
	}
	src, _ := from[kind].(map[string]any)
	dst, _ := kept[kind].(map[string]any)
	if dst == nil {
		dst = map[string]any{}
		kept[kind] = dst
	}
	if _, done := dst[name]; done || src[name] == nil {
		return
	}
	c := dropExamples(src[name])
	dst[name] = c
	visit(c)
}

// dropExamples removes "examples" maps (OpenAPI example objects) from v. A
// schema property that happens to be called "examples" is kept.
func dropExamples(v any) any { return dropExamplesIn(v, "") }

func dropExamplesIn(v any, parentKey string) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if _, isMap := x.(map[string]any); k == "examples" && isMap && parentKey != "properties" {
				continue
			}
			out[k] = dropExamplesIn(x, k)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = dropExamplesIn(x, "")
		}
		return out
	}
	return v
}
