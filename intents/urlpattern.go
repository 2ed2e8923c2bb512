package intents

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// URLPattern matches URLs with the semantics of the web's URLPattern API for
// the constructor-string form tool files use ("http://books.example/*",
// "https://*.example.com/search*", "http{s}?://shop.example/item/:id").
//
// A pattern is split into components: protocol, username, password,
// hostname, port, pathname, search and hash. Each component is matched as a
// whole against the same component of a URL. Inside a component:
//
//   - "*" matches any run of characters, including none and including the
//     component's delimiter ("/" in a pathname, "." in a hostname);
//   - ":name" matches one segment: at least one character other than "/" in
//     a pathname, other than "." in a hostname, anything in other components;
//   - "(regexp)" matches the regular expression (RE2 syntax);
//   - "{...}" groups literal text and groups;
//   - "?", "*" or "+" after a group, a ":name" or a "(regexp)" makes it
//     optional, repeated or repeated at least once; in a pathname a "/"
//     right before such a group is part of it (so "/books/:id?" matches
//     "/books");
//   - "\" escapes the next character.
//
// A component the pattern does not spell out matches anything, except the
// port: a pattern with a hostname and no port matches only the protocol's
// default port (as URLPattern does for constructor strings). Protocol and
// hostname match case-insensitively (URLs carry them lower-cased); the other
// components are case-sensitive. A pattern must be absolute: it names a
// protocol followed by "://".
type URLPattern struct {
	raw   string
	parts [numComponents]*regexp.Regexp
}

type component int

const (
	cProtocol component = iota
	cUsername
	cPassword
	cHostname
	cPort
	cPathname
	cSearch
	cHash
	numComponents
)

var componentNames = [numComponents]string{"protocol", "username", "password", "hostname", "port", "pathname", "search", "hash"}

// defaultPorts are the ports a URL with no explicit port uses.
var defaultPorts = map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"}

// ParseURLPattern compiles a constructor-string pattern. It returns an error
// naming the component at fault when the pattern is not absolute, a group is
// unbalanced, a ":name" is empty or a "(regexp)" does not compile.
func ParseURLPattern(s string) (*URLPattern, error) {
	srcs, err := splitPattern(s)
	if err != nil {
		return nil, fmt.Errorf("URL pattern %q: %w", s, err)
	}
	p := &URLPattern{raw: s}
	for c := range numComponents {
		src, given := srcs[c], srcs[c] != nil
		text := "*"
		if given {
			text = *src
		} else if c == cPort && srcs[cHostname] != nil {
			text = ""
		}
		re, err := compileComponent(c, text)
		if err != nil {
			return nil, fmt.Errorf("URL pattern %q: %s: %w", s, componentNames[c], err)
		}
		p.parts[c] = re
	}
	return p, nil
}

// String returns the pattern as written.
func (p *URLPattern) String() string { return p.raw }

// Match reports whether rawURL, an absolute URL, matches every component of
// the pattern. A URL that does not parse matches nothing.
func (p *URLPattern) Match(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" {
		return false
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == defaultPorts[scheme] {
		port = ""
	}
	path := u.EscapedPath()
	if path == "" && u.Host != "" {
		path = "/"
	}
	var user, pass string
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
	}
	values := [numComponents]string{
		cProtocol: scheme,
		cUsername: user,
		cPassword: pass,
		cHostname: strings.ToLower(u.Hostname()),
		cPort:     port,
		cPathname: path,
		cSearch:   u.RawQuery,
		cHash:     u.EscapedFragment(),
	}
	for c, re := range p.parts {
		if !re.MatchString(values[c]) {
			return false
		}
	}
	return true
}

// MatchAny reports whether rawURL matches at least one of patterns.
func MatchAny(patterns []*URLPattern, rawURL string) bool {
	for _, p := range patterns {
		if p.Match(rawURL) {
			return true
		}
	}
	return false
}

// splitPattern cuts a constructor string into its component sources; a nil
// entry is a component the pattern does not spell out.
func splitPattern(s string) ([numComponents]*string, error) {
	var out [numComponents]*string
	set := func(c component, v string) { out[c] = &v }

	i := indexTopLevel(s, 0, func(s string, i int) bool { return strings.HasPrefix(s[i:], "://") })
	if i < 0 {
		return out, fmt.Errorf(`not absolute: want "protocol://host/path"`)
	}
	if i == 0 {
		return out, fmt.Errorf("empty protocol")
	}
	set(cProtocol, s[:i])
	rest := s[i+3:]

	// The authority ends at the first top-level "/", "?" or "#".
	end := indexTopLevel(rest, 0, func(s string, i int) bool {
		return s[i] == '/' || s[i] == '#' || (s[i] == '?' && !isModifierPosition(s, i))
	})
	if end < 0 {
		end = len(rest)
	}
	authority, rest := rest[:end], rest[end:]
	if at := indexTopLevel(authority, 0, func(s string, i int) bool { return s[i] == '@' }); at >= 0 {
		userinfo := authority[:at]
		authority = authority[at+1:]
		if c := indexTopLevel(userinfo, 0, isPortColon); c >= 0 {
			set(cUsername, userinfo[:c])
			set(cPassword, userinfo[c+1:])
		} else {
			set(cUsername, userinfo)
		}
	}
	if c := indexTopLevel(authority, 0, isPortColon); c >= 0 {
		set(cHostname, authority[:c])
		set(cPort, authority[c+1:])
	} else {
		set(cHostname, authority)
	}
	if *out[cHostname] == "" {
		return out, fmt.Errorf("empty hostname")
	}

	hash := indexTopLevel(rest, 0, func(s string, i int) bool { return s[i] == '#' })
	if hash >= 0 {
		set(cHash, rest[hash+1:])
		rest = rest[:hash]
	}
	q := indexTopLevel(rest, 0, func(s string, i int) bool { return s[i] == '?' && !isModifierPosition(s, i) })
	if q >= 0 {
		set(cSearch, rest[q+1:])
		rest = rest[:q]
	}
	if rest == "" {
		rest = "/"
	}
	set(cPathname, rest)
	return out, nil
}

// indexTopLevel returns the first index at or after from where at holds,
// skipping escaped characters and the insides of "{...}" and "(...)".
func indexTopLevel(s string, from int, at func(s string, i int) bool) int {
	depth := 0
	for i := from; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
			continue
		case '{', '(':
			depth++
			continue
		case '}', ')':
			if depth > 0 {
				depth--
			}
			continue
		}
		if depth == 0 && at(s, i) {
			return i
		}
	}
	return -1
}

// isPortColon reports whether the ":" at i separates a port (or password)
// rather than starting a ":name" group.
func isPortColon(s string, i int) bool {
	return s[i] == ':' && (i+1 >= len(s) || !isNameStart(s[i+1]))
}

// isModifierPosition reports whether a "?" at i modifies what precedes it (a
// group, a regexp or a name) rather than starting the search component.
func isModifierPosition(s string, i int) bool {
	if i == 0 {
		return false
	}
	prev := s[i-1]
	if prev == '}' || prev == ')' {
		return true
	}
	// A ":name" right before: walk back over name characters to a ":".
	j := i - 1
	for j >= 0 && isNameChar(s[j]) {
		j--
	}
	return j >= 0 && j < i-1 && s[j] == ':'
}

func isNameStart(b byte) bool {
	return b == '_' || b == '$' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')
}

func isNameChar(b byte) bool { return isNameStart(b) || (b >= '0' && b <= '9') }

// compileComponent turns one component's pattern into an anchored regexp.
func compileComponent(c component, src string) (*regexp.Regexp, error) {
	body, err := translate(c, src)
	if err != nil {
		return nil, err
	}
	flags := ""
	if c == cProtocol || c == cHostname {
		flags = "(?i)"
	}
	re, err := regexp.Compile(flags + "^(?:" + body + ")$")
	if err != nil {
		return nil, fmt.Errorf("bad regexp: %w", err)
	}
	return re, nil
}

// segmentRegexp is what ":name" matches in component c.
func segmentRegexp(c component) string {
	switch c {
	case cPathname:
		return `[^/]+?`
	case cHostname:
		return `[^.]+?`
	default:
		return `.+?`
	}
}

// translate converts a component pattern into a regexp body.
func translate(c component, src string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(src); {
		// unit is the regexp of the next token; grouped says a modifier may
		// follow it.
		var unit string
		grouped := false
		prefix := ""
		if c == cPathname && src[i] == '/' && i+1 < len(src) && (src[i+1] == ':' || src[i+1] == '(') {
			prefix = "/"
			i++
		}
		switch ch := src[i]; {
		case ch == '\\':
			if i+1 >= len(src) {
				return "", fmt.Errorf("trailing backslash")
			}
			unit = regexp.QuoteMeta(src[i+1 : i+2])
			i += 2
		case ch == '*':
			unit, grouped = `.*`, false
			i++
		case ch == ':':
			j := i + 1
			for j < len(src) && isNameChar(src[j]) {
				j++
			}
			if j == i+1 || !isNameStart(src[i+1]) {
				return "", fmt.Errorf(`":" must start a name at offset %d`, i)
			}
			i = j
			unit, grouped = segmentRegexp(c), true
			if i < len(src) && src[i] == '(' { // ":name(regexp)"
				re, n, err := readParen(src, i)
				if err != nil {
					return "", err
				}
				unit, i = re, i+n
			}
		case ch == '(':
			re, n, err := readParen(src, i)
			if err != nil {
				return "", err
			}
			unit, grouped, i = re, true, i+n
		case ch == '{':
			closing := matchingBrace(src, i)
			if closing < 0 {
				return "", fmt.Errorf(`unclosed "{" at offset %d`, i)
			}
			inner, err := translate(c, src[i+1:closing])
			if err != nil {
				return "", err
			}
			unit, grouped, i = inner, true, closing+1
		case ch == '}' || ch == ')':
			return "", fmt.Errorf("unbalanced %q at offset %d", ch, i)
		default:
			unit = regexp.QuoteMeta(string(ch))
			i++
		}
		mod := ""
		if grouped && i < len(src) && (src[i] == '?' || src[i] == '*' || src[i] == '+') {
			mod = string(src[i])
			i++
		}
		switch {
		case prefix != "" && mod != "":
			b.WriteString("(?:/(?:" + unit + "))" + mod)
		case prefix != "":
			b.WriteString("/(?:" + unit + ")")
		case mod != "":
			b.WriteString("(?:" + unit + ")" + mod)
		default:
			b.WriteString("(?:" + unit + ")")
		}
	}
	return b.String(), nil
}

// readParen reads a "(regexp)" starting at src[i] == '(' and returns the
// regexp and the number of bytes consumed.
func readParen(src string, i int) (string, int, error) {
	depth := 0
	for j := i; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				inner := src[i+1 : j]
				if inner == "" {
					return "", 0, fmt.Errorf(`empty "()" at offset %d`, i)
				}
				if _, err := regexp.Compile(inner); err != nil {
					return "", 0, fmt.Errorf("regexp group %q: %w", inner, err)
				}
				return inner, j - i + 1, nil
			}
		}
	}
	return "", 0, fmt.Errorf(`unclosed "(" at offset %d`, i)
}

// matchingBrace returns the index of the "}" closing the "{" at i, or -1.
func matchingBrace(src string, i int) int {
	depth := 0
	for j := i; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}
