package action

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// This file evaluates the GitHub Actions expressions action.yml uses, so the
// tests can run its steps as the runner would: `${{ }}` templates in env:
// and with: values, if: conditions and output values. It parses the subset
// of the expression language the Action needs (literals, context property
// paths, !, ==, !=, &&, ||, parentheses, the status functions) and
// evaluates it by GitHub's documented rules (loose equality,
// case-insensitive strings, || and && returning an operand). Anything else
// is an error, so action.yml cannot drift into syntax the tests do not
// exercise. (actionlint's own parser would do, but actionlint v1.7.12 does
// not compile in this module's graph; see scripts/setup.sh.)

// exprContext is the data expressions read: inputs, github, runner, steps,
// plus the job status for the status functions.
type exprContext struct {
	vars   map[string]any
	failed bool
}

var templatePattern = regexp.MustCompile(`\$\{\{(.*?)\}\}`)

// template expands every ${{ expr }} in s.
func (c *exprContext) template(s string) (string, error) {
	var firstErr error
	out := templatePattern.ReplaceAllStringFunc(s, func(m string) string {
		v, err := c.eval(templatePattern.FindStringSubmatch(m)[1])
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("%s: %w", m, err)
		}
		return toString(v)
	})
	return out, firstErr
}

// statusCall matches a call of a status function.
var statusCall = regexp.MustCompile(`(?i)\b(success|failure|always|cancelled)\(\)`)

// condition evaluates an if: value; without a status function it is
// implicitly success() && (cond).
func (c *exprContext) condition(cond string) (bool, error) {
	cond = strings.TrimSpace(cond)
	if m := templatePattern.FindStringSubmatch(cond); m != nil && m[0] == cond {
		cond = m[1]
	}
	if cond == "" {
		return !c.failed, nil
	}
	v, err := c.eval(cond)
	if err != nil {
		return false, err
	}
	if !statusCall.MatchString(cond) && c.failed {
		return false, nil
	}
	return truthy(v), nil
}

// eval parses and evaluates one expression.
func (c *exprContext) eval(src string) (any, error) {
	p := &exprParser{c: c, toks: exprTokens.FindAllString(src, -1)}
	if strings.TrimSpace(exprTokens.ReplaceAllString(src, "")) != "" {
		return nil, fmt.Errorf("expression %q: characters the test evaluator does not know", src)
	}
	v, err := p.or()
	if err == nil && p.i < len(p.toks) {
		err = fmt.Errorf("unexpected %q", p.toks[p.i])
	}
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", src, err)
	}
	return v, nil
}

// exprTokens splits an expression into tokens: strings, numbers, operators,
// parentheses, names (with dots and dashes, as in inputs.time-cap).
var exprTokens = regexp.MustCompile(`'(?:[^']|'')*'|[0-9]+(?:\.[0-9]+)?|==|!=|&&|\|\||[!()]|[A-Za-z_][A-Za-z0-9_.-]*`)

// exprParser evaluates while it parses (both operands of && and || are
// parsed; only the value chosen matters, and the subset has no effects).
type exprParser struct {
	c    *exprContext
	toks []string
	i    int
}

func (p *exprParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *exprParser) or() (any, error) {
	l, err := p.and()
	for err == nil && p.peek() == "||" {
		p.i++
		var r any
		if r, err = p.and(); !truthy(l) {
			l = r
		}
	}
	return l, err
}

func (p *exprParser) and() (any, error) {
	l, err := p.cmp()
	for err == nil && p.peek() == "&&" {
		p.i++
		var r any
		if r, err = p.cmp(); truthy(l) {
			l = r
		}
	}
	return l, err
}

func (p *exprParser) cmp() (any, error) {
	l, err := p.unary()
	for err == nil && (p.peek() == "==" || p.peek() == "!=") {
		op := p.toks[p.i]
		p.i++
		var r any
		if r, err = p.unary(); err == nil {
			l = looseEqual(l, r) == (op == "==")
		}
	}
	return l, err
}

func (p *exprParser) unary() (any, error) {
	if p.peek() == "!" {
		p.i++
		v, err := p.unary()
		return !truthy(v), err
	}
	return p.primary()
}

func (p *exprParser) primary() (any, error) {
	tok := p.peek()
	p.i++
	switch {
	case tok == "":
		return nil, fmt.Errorf("unexpected end")
	case tok == "(":
		v, err := p.or()
		if err == nil && p.peek() != ")" {
			err = fmt.Errorf("missing )")
		}
		p.i++
		return v, err
	case strings.HasPrefix(tok, "'"):
		return strings.ReplaceAll(tok[1:len(tok)-1], "''", "'"), nil
	case tok[0] >= '0' && tok[0] <= '9':
		return strconv.ParseFloat(tok, 64)
	case strings.EqualFold(tok, "true"), strings.EqualFold(tok, "false"):
		return strings.EqualFold(tok, "true"), nil
	case strings.EqualFold(tok, "null"):
		return nil, nil
	case p.peek() == "(":
		p.i++
		if p.peek() != ")" {
			return nil, fmt.Errorf("function %s: arguments are not supported by the test evaluator", tok)
		}
		p.i++
		switch strings.ToLower(tok) {
		case "success":
			return !p.c.failed, nil
		case "failure":
			return p.c.failed, nil
		case "always":
			return true, nil
		case "cancelled":
			return false, nil
		}
		return nil, fmt.Errorf("function %s is not supported by the test evaluator", tok)
	}
	var v any = p.c.vars
	for _, name := range strings.Split(tok, ".") {
		m, _ := v.(map[string]any)
		v = lookup(m, name)
	}
	return v, nil
}

// lookup reads a property case-insensitively, as GitHub does.
func lookup(m map[string]any, name string) any {
	if v, ok := m[name]; ok {
		return v
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0 && !math.IsNaN(v)
	case string:
		return v != ""
	}
	return true
}

// looseEqual is GitHub's ==: strings compare ignoring case; mixed types
// compare as numbers.
func looseEqual(a, b any) bool {
	if as, ok := a.(string); ok {
		if bs, ok := b.(string); ok {
			return strings.EqualFold(as, bs)
		}
	}
	if a == nil && b == nil {
		return true
	}
	x, y := toNumber(a), toNumber(b)
	return x == y
}

func toNumber(v any) float64 {
	switch v := v.(type) {
	case nil:
		return 0
	case bool:
		if v {
			return 1
		}
		return 0
	case float64:
		return v
	case string:
		if strings.TrimSpace(v) == "" {
			return 0
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return math.NaN()
		}
		return f
	}
	return math.NaN()
}

// toString renders a value as a template expansion does.
func toString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}
