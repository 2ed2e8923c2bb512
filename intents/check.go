package intents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents/config"
)

var (
	intentID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`)
	toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
)

// checkConfigDomains checks that .pairbench.yml maps only known domains.
func (l *loader) checkConfigDomains() {
	for name := range l.reg.Config.Domains {
		if l.domains[name] == nil {
			l.ps.Add(Pos{File: l.file(config.File), Line: max(l.configLines["domains."+name], 1)}, "domains: %q is not a domain in %s", name, l.reg.Config.Paths.Domains)
		}
	}
}

func (l *loader) checkDomain(d *loadedDomain) {
	at := func(field string) Pos { return Pos{File: d.File, Line: max(d.lines[field], 1)} }

	seen := map[string]Pos{}
	for _, t := range d.Tools {
		switch {
		case t.Name == "":
			l.ps.Add(t.Pos, "tool has no name")
		case !toolName.MatchString(t.Name):
			l.ps.Add(t.Pos, "tool name %q: use letters, digits, '_', '-' or '.' (at most 128)", t.Name)
		case seen[t.Name] != Pos{}:
			l.ps.Add(t.Pos, "tool %q is already defined in %s", t.Name, seen[t.Name].File)
		default:
			seen[t.Name] = t.Pos
		}
		if strings.TrimSpace(t.Description) == "" {
			l.ps.Add(t.Pos, "tool %s has no description", t.Name)
		}
		if t.InputSchema != nil {
			if typ, ok := t.InputSchema["type"]; ok && typ != "object" {
				l.ps.Add(t.Pos, "tool %s: inputSchema type must be \"object\"", t.Name)
			}
			if _, err := compileSchema(t.InputSchema, "tool:"+d.Name+":"+t.Name); err != nil {
				l.ps.Add(t.Pos, "tool %s: inputSchema: %v", t.Name, err)
			}
		}
		if len(t.URLPatterns) == 0 {
			l.ps.Add(t.Pos, "tool %s has no urlPatterns, so it would appear on no page", t.Name)
		}
		for _, p := range t.URLPatterns {
			if _, err := ParseURLPattern(p); err != nil {
				l.ps.Add(t.Pos, "tool %s: %v", t.Name, err)
			}
		}
	}

	for _, p := range d.StartURLs {
		if _, err := ParseURLPattern(p); err != nil {
			l.ps.Add(at("start_urls"), "start_urls: %v", err)
		}
	}
	for _, field := range []struct {
		key   string
		names []string
	}{{"exclude", d.Exclude}, {"needs_sign_in", d.NeedsSignIn}} {
		for _, name := range field.names {
			if d.Tool(name) == nil {
				l.ps.Add(at(field.key), "%s names tool %q, which %s does not define", field.key, name, d.Name)
			}
		}
	}
	if d.SignedInCheck != "" {
		switch t := d.Tool(d.SignedInCheck); {
		case t == nil:
			l.ps.Add(at("signed_in_check"), "signed_in_check names tool %q, which %s does not define", d.SignedInCheck, d.Name)
		case !t.ReadOnly:
			l.ps.Add(at("signed_in_check"), "signed_in_check tool %q must be read-only (readOnlyHint: true)", d.SignedInCheck)
		}
		if d.Profile == "" {
			l.ps.Add(at("signed_in_check"), "signed_in_check needs a profile to sign in with")
		}
	}
}

// checkIntents checks each intent and the ids across them.
func (l *loader) checkIntents() {
	byID := map[string]string{}
	for _, li := range l.intents {
		l.checkIntent(li)
		if li.ID == "" {
			continue
		}
		if prev, dup := byID[li.ID]; dup {
			l.ps.Add(Pos{File: li.File, Line: li.dec.Line("id")}, "intent id %q is already used by %s", li.ID, prev)
			continue
		}
		byID[li.ID] = li.File
	}
}

// intentCheck checks one intent, reporting each problem at the line of the
// field it concerns.
type intentCheck struct {
	l  *loader
	in *Intent
	li *loadedIntent
}

func (c intentCheck) add(path, format string, args ...any) {
	c.l.ps.Add(c.li.dec.At(c.li.dec.Line(path)), format, args...)
}

// has reports whether the intent file spells out the field at path.
func (c intentCheck) has(path string) bool { return c.li.dec.Lines[path] != 0 }

func (l *loader) checkIntent(li *loadedIntent) {
	c := intentCheck{l: l, in: li.Intent, li: li}
	c.required()
	c.placeholders()
	c.classAndAgreement()
	c.criteria()
	c.answerSchema()
	c.baseline()
	c.domainAndEntryTool()
}

func (c intentCheck) required() {
	in := c.in
	for _, f := range []struct {
		key   string
		empty bool
	}{
		{"id", in.ID == ""}, {"domain", in.Domain == ""}, {"start_url", in.StartURL == ""},
		{"prompt", strings.TrimSpace(in.Prompt) == ""}, {"entry_tool", in.EntryTool == ""},
		{"answer", in.Answer == nil}, {"class", in.Class == ""}, {"baseline", !c.has("baseline")},
	} {
		if f.empty {
			c.add(f.key, "missing required field %s", f.key)
		}
	}
	if in.ID != "" && !intentID.MatchString(in.ID) {
		c.add("id", "id %q: use lower-case letters, digits, '.', '_' or '-' (at most 100)", in.ID)
	}
}

// placeholders checks fixture names and that every {{name}} names one.
func (c intentCheck) placeholders() {
	in := c.in
	for _, name := range slices.Sorted(maps.Keys(in.Fixtures)) {
		if !fixtureName.MatchString(name) {
			c.add("fixtures."+name, "fixture name %q: use letters, digits and '_'", name)
		}
	}
	use := func(path string) func(string) {
		return func(s string) {
			names, bad := placeholders(s)
			for _, b := range bad {
				c.add(path, "%s: malformed placeholder %s (want {{name}})", path, b)
			}
			for _, n := range names {
				if _, ok := in.Fixtures[n]; !ok {
					c.add(path, "%s: {{%s}} names no fixture", path, n)
				}
			}
		}
	}
	use("prompt")(in.Prompt)
	use("start_url")(in.StartURL)
	for i, r := range in.Rules {
		path := fmt.Sprintf("rules[%d]", i)
		eachString(r.Value, use(path))
		eachString(r.Values, use(path))
	}
	c.checkPlaceholders()
	eachString(in.Baseline.ToolArgs, use("baseline.tool_args"))
	eachString(in.Baseline.Answer, use("baseline.answer"))
	for i, s := range in.Baseline.Steps {
		eachString(s.Args, use(fmt.Sprintf("baseline.steps[%d]", i)))
	}
}

func (c intentCheck) classAndAgreement() {
	in := c.in
	if in.Class != "" && !in.Class.Valid() {
		c.add("class", "class %q: want %q, %q, %q or %q", in.Class, pairbench.AnswerPinned, pairbench.AnswerAgreement, pairbench.AnswerShapeOnly, pairbench.AnswerJudged)
	}
	if in.Class == pairbench.AnswerAgreement && in.Agreement == nil {
		c.add("class", "class %q needs an agreement", pairbench.AnswerAgreement)
	}
	a := in.Agreement
	if a == nil {
		return
	}
	switch a.Kind {
	case pairbench.AgreeSame:
	case pairbench.AgreeCheapest:
		if a.Field == "" {
			c.add("agreement", "agreement cheapest needs the field holding the price")
		}
	case "":
		c.add("agreement", "agreement has no kind (want %q or %q)", pairbench.AgreeSame, pairbench.AgreeCheapest)
	default:
		c.add("agreement.kind", "agreement kind %q: want %q or %q", a.Kind, pairbench.AgreeSame, pairbench.AgreeCheapest)
	}
	if a.Tolerance < 0 {
		c.add("agreement.tolerance", "agreement tolerance must not be negative")
	}
	if a.Field != "" && in.Answer != nil && !schemaHasField(in.Answer, a.Field) {
		c.add("agreement.field", "agreement field %q is not a property of the answer schema", a.Field)
	}
}

func (c intentCheck) answerSchema() {
	in := c.in
	if in.Answer == nil {
		return
	}
	if typ, ok := in.Answer["type"]; !ok || typ != "object" {
		c.add("answer", "answer schema must have type: object (answers are JSON objects)")
	}
	if _, err := compileSchema(in.Answer, "intent:"+in.ID+":answer"); err != nil {
		c.add("answer", "answer schema: %v", err)
	}
}

func (c intentCheck) baseline() {
	b := c.in.Baseline
	if !c.has("baseline") {
		return
	}
	if b.Answer == nil {
		c.add("baseline", "baseline has no answer (a known-correct answer)")
	}
	if len(b.Steps) == 0 {
		c.add("baseline", "baseline has no steps (what a competent agent does without tools)")
	}
	for i, s := range b.Steps {
		path := fmt.Sprintf("baseline.steps[%d]", i)
		if !strings.HasPrefix(s.Tool, "browser_") {
			c.add(path, "%s: tool %q is not a browser tool (want a Playwright MCP name like browser_click)", path, s.Tool)
		}
	}
}

// domainAndEntryTool checks the intent against its domain: the domain
// exists, the start URL is one of its pages, and the entry tool is
// registered, appears on the start URL and accepts the baseline's arguments.
func (c intentCheck) domainAndEntryTool() {
	in := c.in
	if in.Domain == "" {
		return
	}
	if c.li.dirDomain != in.Domain {
		c.add("domain", "domain is %q but the file is in the directory for %q", in.Domain, c.li.dirDomain)
	}
	d := c.l.domains[in.Domain]
	if d == nil {
		c.add("domain", "domain %q does not exist (no %s/%s/domain.json)", in.Domain, c.l.reg.Config.Paths.Domains, in.Domain)
		return
	}
	// Any start time will do: only the URL's shape and the arguments'
	// types are checked.
	resolved, err := Resolve(*in, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		return // an undefined placeholder, reported by placeholders
	}
	start := resolved.StartURL
	if u, err := url.Parse(start); start != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		c.add("start_url", "start_url %q is not an absolute http(s) URL", in.StartURL)
		start = ""
	}
	if start != "" && len(d.StartURLs) > 0 && !matchesAnyString(d.StartURLs, start) {
		c.add("start_url", "start_url %s matches none of %s's start_urls", start, d.Name)
	}
	if in.EntryTool == "" {
		return
	}
	t := d.Tool(in.EntryTool)
	switch {
	case t == nil:
		c.add("entry_tool", "entry_tool %q is not a tool of %s", in.EntryTool, d.Name)
		return
	case !t.ReadOnly:
		c.add("entry_tool", "entry_tool %q is not registered: it is not read-only (readOnlyHint: true)", in.EntryTool)
	case slices.Contains(d.Exclude, t.Name):
		c.add("entry_tool", "entry_tool %q is not registered: %s excludes it", in.EntryTool, d.Name)
	case !d.SignsIn() && slices.Contains(d.NeedsSignIn, t.Name):
		c.add("entry_tool", "entry_tool %q is not registered: it needs sign-in and %s has no profile", in.EntryTool, d.Name)
	}
	if start != "" && !t.Matches(start) {
		c.add("start_url", "start_url %s is not a page entry_tool %s appears on (urlPatterns %s)", start, t.Name, strings.Join(t.URLPatterns, ", "))
	}
	if t.InputSchema != nil && c.has("baseline") {
		args := resolved.Baseline.ToolArgs
		if args == nil {
			args = map[string]any{}
		}
		if err := validateJSON(t.InputSchema, "tool:"+d.Name+":"+t.Name, args); err != nil {
			c.add("baseline.tool_args", "baseline.tool_args do not fit %s's inputSchema: %v", t.Name, err)
		}
	}
}

func matchesAnyString(patterns []string, rawURL string) bool {
	for _, s := range patterns {
		if p, err := ParseURLPattern(s); err == nil && p.Match(rawURL) {
			return true
		}
	}
	return false
}

// schemaHasField reports whether the dotted field's first part is a
// property of the object schema.
func schemaHasField(schema map[string]any, field string) bool {
	props, _ := schema["properties"].(map[string]any)
	head, _, _ := strings.Cut(field, ".")
	_, ok := props[head]
	return ok
}

// compileSchema compiles a JSON Schema held as JSON-like values (draft
// 2020-12 by default). $refs may only point inside the document: nothing is
// loaded from files or the network.
func compileSchema(doc map[string]any, name string) (*jsonschema.Schema, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(jsonschema.SchemeURLLoader{})
	u := "urn:pairbench:" + url.PathEscape(name)
	if err := c.AddResource(u, v); err != nil {
		return nil, firstLine(err)
	}
	s, err := c.Compile(u)
	if err != nil {
		return nil, firstLine(err)
	}
	return s, nil
}

// validateJSON validates a JSON-like value against schema.
func validateJSON(schema map[string]any, name string, v any) error {
	s, err := compileSchema(schema, name)
	if err != nil {
		return nil // the schema itself is reported elsewhere
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	if err := s.Validate(doc); err != nil {
		return firstLine(err)
	}
	return nil
}

// firstLine reduces a jsonschema error to one line: its first most
// specific cause, "at '<location>': <what>".
func firstLine(err error) error {
	var se *jsonschema.SchemaValidationError
	if errors.As(err, &se) {
		err = se.Err
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		line, _, _ := strings.Cut(strings.TrimSpace(err.Error()), "\n")
		return errors.New(line)
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := "/" + strings.Join(ve.InstanceLocation, "/")
	if len(ve.InstanceLocation) == 0 {
		loc = ""
	}
	return fmt.Errorf("at '%s': %s", loc, ve.ErrorKind.LocalizedString(message.NewPrinter(language.English)))
}
