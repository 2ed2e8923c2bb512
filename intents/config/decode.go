package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxYAMLValues bounds the values one YAML file may expand to (aliases can
// repeat a subtree many times); maxYAMLDepth bounds nesting (an alias can
// contain itself).
const (
	maxYAMLValues = 100000
	maxYAMLDepth  = 64
)

// Decoder fills Go structs from yaml.v3 nodes strictly: unknown and
// duplicate keys are problems, every problem has its line, and every field's
// line is kept so later checks can point at it. Fields are matched by their
// yaml tags; an embedded Pos gets the position of its mapping.
type Decoder struct {
	// Lines maps a field's path ("baseline.answer") to the line of its key.
	Lines map[string]int
	// Custom decodes the values of its types in place of the rules above
	// (a type with a short form, as an intent's fixtures have).
	Custom map[reflect.Type]func(d *Decoder, n *yaml.Node, v reflect.Value, path string)

	file   string
	ps     *Problems
	root   int // line of the document's top mapping
	budget int
}

// NewDecoder returns a decoder of the file named file that adds its
// problems to ps.
func NewDecoder(file string, ps *Problems) *Decoder {
	return &Decoder{file: file, ps: ps, Lines: map[string]int{}, budget: maxYAMLValues}
}

// At is the position of line in the decoder's file.
func (d *Decoder) At(line int) Pos { return Pos{File: d.file, Line: line} }

// Problem adds a problem at line.
func (d *Decoder) Problem(line int, format string, args ...any) {
	d.ps.Add(d.At(line), format, args...)
}

// Line returns the line of the field at path, or of the nearest enclosing
// field that has one, or of the document's top mapping.
func (d *Decoder) Line(path string) int {
	for {
		if l, ok := d.Lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return max(d.root, 1)
		}
		path = path[:i]
	}
}

// ParseDocument reads exactly one YAML document. A syntax error is
// reported at its line and returns nil.
func ParseDocument(file string, data []byte, ps *Problems) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			ps.Add(Pos{File: file, Line: 1}, "empty file")
			return nil
		}
		ps.Add(Pos{File: file, Line: yamlErrorLine(err)}, "%s", yamlErrorMessage(err))
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		ps.Add(Pos{File: file, Line: extra.Line}, "a second YAML document; one file holds one document")
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0]
	}
	ps.Add(Pos{File: file, Line: 1}, "empty file")
	return nil
}

// yamlParserProblems are the messages of yaml.v3's parser (as opposed to
// its scanner). yaml.v3 v3.0.1 reports the line of a parser error counting
// from 0, and a scanner error's counting from 1.
var yamlParserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// yamlErrorLine reads the line yaml.v3 puts in its syntax errors ("yaml:
// line 3: ..."), corrected to count from 1; yaml.v3 has no typed syntax
// error. 1 when there is none.
func yamlErrorLine(err error) int {
	var line int
	if _, scanErr := fmt.Sscanf(err.Error(), "yaml: line %d:", &line); scanErr != nil || line < 0 {
		return 1
	}
	for _, p := range yamlParserProblems {
		if strings.HasSuffix(err.Error(), ": "+p) {
			return line + 1
		}
	}
	return max(line, 1)
}

func yamlErrorMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if i := strings.Index(msg, ": "); strings.HasPrefix(msg, "line ") && i > 0 {
		msg = msg[i+2:]
	}
	return "YAML: " + msg
}

var posType = reflect.TypeFor[Pos]()

// Decode fills v from n; path names v in messages ("" is the document).
func (d *Decoder) Decode(n *yaml.Node, v reflect.Value, path string) {
	n = ResolveAlias(n)
	if n == nil {
		return
	}
	t := v.Type()
	if custom, ok := d.Custom[t]; ok {
		custom(d, n, v, path)
		return
	}
	switch {
	case t.Kind() == reflect.Struct:
		d.structure(n, v, path)
	case t.Kind() == reflect.Pointer:
		if isNull(n) {
			return
		}
		p := reflect.New(t.Elem())
		d.Decode(n, p.Elem(), path)
		v.Set(p)
	case t.Kind() == reflect.Interface ||
		(t.Kind() == reflect.Map || t.Kind() == reflect.Slice) && t.Elem().Kind() == reflect.Interface:
		// any, map[string]any, []any: JSON-like values.
		val, ok := d.Plain(n, path, 0)
		if !ok || val == nil {
			return
		}
		rv := reflect.ValueOf(val)
		if !rv.Type().AssignableTo(t) {
			d.ps.Add(d.At(n.Line), "%s: want %s", orFile(path), kindName(t))
			return
		}
		v.Set(rv)
	case t.Kind() == reflect.Slice:
		if isNull(n) {
			return
		}
		if n.Kind != yaml.SequenceNode {
			d.ps.Add(d.At(n.Line), "%s: want a list", orFile(path))
			return
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.Decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		if isNull(n) {
			return
		}
		if n.Kind != yaml.MappingNode {
			d.ps.Add(d.At(n.Line), "%s: want a mapping", orFile(path))
			return
		}
		m := reflect.MakeMap(t)
		d.EachKey(n, path, func(key string, k, val *yaml.Node) {
			ev := reflect.New(t.Elem()).Elem()
			d.Decode(val, ev, joinPath(path, key))
			m.SetMapIndex(reflect.ValueOf(key).Convert(t.Key()), ev)
		})
		v.Set(m)
	default:
		if n.Kind != yaml.ScalarNode {
			d.ps.Add(d.At(n.Line), "%s: want %s", path, kindName(t))
			return
		}
		if isNull(n) {
			return
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.ps.Add(d.At(n.Line), "%s: want %s, got %q", path, kindName(t), n.Value)
		}
	}
}

// structure fills the struct v from the mapping n, by yaml tags.
func (d *Decoder) structure(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		what := path
		if what == "" {
			what = "the file"
		}
		d.ps.Add(d.At(n.Line), "%s: want a mapping", what)
		return
	}
	if path == "" {
		d.root = n.Line
	}
	t := v.Type()
	fields := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type == posType && f.Anonymous {
			v.Field(i).Set(reflect.ValueOf(d.At(n.Line)))
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name != "" && name != "-" && f.IsExported() {
			fields[name] = i
		}
	}
	d.EachKey(n, path, func(key string, k, val *yaml.Node) {
		i, ok := fields[key]
		if !ok {
			if path == "" {
				d.ps.Add(d.At(k.Line), "unknown field %q", key)
			} else {
				d.ps.Add(d.At(k.Line), "unknown field %q in %s", key, path)
			}
			return
		}
		d.Decode(val, v.Field(i), joinPath(path, key))
	})
}

// EachKey calls fn for each key of the mapping n, reporting non-string and
// duplicate keys, and records each key's line.
func (d *Decoder) EachKey(n *yaml.Node, path string, fn func(key string, k, val *yaml.Node)) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := ResolveAlias(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			d.ps.Add(d.At(n.Content[i].Line), "%s: keys must be strings", orFile(path))
			continue
		}
		if seen[k.Value] {
			d.ps.Add(d.At(k.Line), "duplicate field %q", joinPath(path, k.Value))
			continue
		}
		seen[k.Value] = true
		d.Lines[joinPath(path, k.Value)] = k.Line
		fn(k.Value, k, val)
	}
}

// Plain converts n to JSON-like Go values: nil, bool, float64, string, []any
// and map[string]any. It reports values JSON cannot hold.
func (d *Decoder) Plain(n *yaml.Node, path string, depth int) (any, bool) {
	n = ResolveAlias(n)
	if n == nil {
		return nil, true
	}
	d.budget--
	if d.budget < 0 {
		if d.budget == -1 {
			d.ps.Add(d.At(n.Line), "%s: more than %d values (aliases expanding too far?)", shortPath(path), maxYAMLValues)
		}
		return nil, false
	}
	if depth > maxYAMLDepth {
		d.ps.Add(d.At(n.Line), "%s: nested more than %d deep", shortPath(path), maxYAMLDepth)
		d.budget = -2 // one report; stop expanding
		return nil, false
	}
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, true
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err == nil {
				return b, true
			}
		case "!!int", "!!float":
			var f float64
			if err := n.Decode(&f); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				return f, true
			}
			d.ps.Add(d.At(n.Line), "%s: %q is not a finite number", path, n.Value)
			return nil, false
		}
		return n.Value, true
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		ok := true
		for i, item := range n.Content {
			v, itemOK := d.Plain(item, fmt.Sprintf("%s[%d]", path, i), depth+1)
			ok = ok && itemOK
			out = append(out, v)
		}
		return out, ok
	case yaml.MappingNode:
		out := map[string]any{}
		ok := true
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := ResolveAlias(n.Content[i])
			if k == nil || k.Kind != yaml.ScalarNode {
				d.ps.Add(d.At(n.Content[i].Line), "%s: keys must be strings", orFile(path))
				ok = false
				continue
			}
			if seen[k.Value] {
				d.ps.Add(d.At(k.Line), "duplicate key %q in %s", k.Value, orFile(path))
				ok = false
				continue
			}
			seen[k.Value] = true
			v, itemOK := d.Plain(n.Content[i+1], joinPath(path, k.Value), depth+1)
			ok = ok && itemOK
			out[k.Value] = v
		}
		return out, ok
	}
	d.ps.Add(d.At(n.Line), "%s: not a JSON value", orFile(path))
	return nil, false
}

// ResolveAlias follows an alias to its anchor (yaml.v3 rejects cycles when
// parsing).
func ResolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// shortPath names a possibly very long value path in a message.
func shortPath(path string) string {
	if len(path) > 40 {
		return path[:40] + "…"
	}
	return orFile(path)
}

func orFile(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}

// kindName names what a Go type wants, for messages.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	case reflect.Map:
		return "a mapping"
	case reflect.Slice:
		return "a list"
	default:
		return "a value"
	}
}
