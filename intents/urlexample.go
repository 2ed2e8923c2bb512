package intents

import (
	"fmt"
	"net/url"
	"regexp/syntax"
	"strings"
	"unicode"
)

// Example returns a URL the pattern matches, as short as the pattern allows:
// http (else https) when the protocol allows it, "*" and optional groups
// left out, a ":name" "x", a "(regexp)" its shortest match, a wildcard
// hostname label "x". `pairbench validate --browser` loads it to check that
// a tool registers where its patterns say. It fails for a pattern it cannot
// find a URL for.
func (p *URLPattern) Example() (string, error) {
	var parts [numComponents]string
	for c, re := range p.parts {
		if component(c) == cProtocol && (re.MatchString("http") || re.MatchString("https")) {
			parts[c] = "http"
			if !re.MatchString("http") {
				parts[c] = "https"
			}
			continue
		}
		s, err := shortestMatch(re.String(), component(c) == cHostname)
		if err != nil {
			return "", fmt.Errorf("URL pattern %q: %s: %w", p.raw, componentNames[c], err)
		}
		parts[c] = s
	}
	u := url.URL{Scheme: strings.ToLower(parts[cProtocol]), Host: strings.ToLower(parts[cHostname]),
		RawPath: parts[cPathname], RawQuery: parts[cSearch], RawFragment: parts[cHash]}
	if parts[cPort] != "" {
		u.Host += ":" + parts[cPort]
	}
	if parts[cUsername] != "" || parts[cPassword] != "" {
		u.User = url.UserPassword(parts[cUsername], parts[cPassword])
	}
	var err error
	if u.Path, err = url.PathUnescape(parts[cPathname]); err != nil {
		return "", fmt.Errorf("URL pattern %q: pathname %q: %w", p.raw, parts[cPathname], err)
	}
	if u.Fragment, err = url.PathUnescape(parts[cHash]); err != nil {
		return "", fmt.Errorf("URL pattern %q: hash %q: %w", p.raw, parts[cHash], err)
	}
	out := u.String()
	if !p.Match(out) {
		return "", fmt.Errorf("URL pattern %q: found no URL it matches (tried %s)", p.raw, out)
	}
	return out, nil
}

// shortestMatch returns a short string re matches. In a hostname, a run of
// any characters is one label, "x", so that "*.example.com" gives
// "x.example.com" rather than ".example.com".
func shortestMatch(re string, hostname bool) (string, error) {
	tree, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := writeShortest(&b, tree.Simplify(), hostname); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeShortest(b *strings.Builder, re *syntax.Regexp, hostname bool) error {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				r = unicode.ToLower(r)
			}
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		r, ok := pickRune(re.Rune)
		if !ok {
			return fmt.Errorf("an empty character class")
		}
		b.WriteRune(r)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('x')
	case syntax.OpCapture:
		return writeShortest(b, re.Sub[0], hostname)
	case syntax.OpStar, syntax.OpQuest:
		// A hostname's wildcard stands for a label; elsewhere it is left out.
		if hostname && re.Op == syntax.OpStar && anyChar(re.Sub[0]) {
			b.WriteByte('x')
		}
	case syntax.OpPlus:
		return writeShortest(b, re.Sub[0], hostname)
	case syntax.OpRepeat:
		for range re.Min {
			if err := writeShortest(b, re.Sub[0], hostname); err != nil {
				return err
			}
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if err := writeShortest(b, sub, hostname); err != nil {
				return err
			}
		}
	case syntax.OpAlternate:
		return writeShortest(b, re.Sub[0], hostname)
	default:
		return fmt.Errorf("cannot build a match for %s", re)
	}
	return nil
}

// anyChar reports whether re matches any one character (".", or a class
// that excludes only a separator, as ":name" compiles to).
func anyChar(re *syntax.Regexp) bool {
	return re.Op == syntax.OpAnyChar || re.Op == syntax.OpAnyCharNotNL
}

// pickRune picks a character from a class given as ranges: "x" or a letter
// or digit when the class has one, else its first character.
func pickRune(ranges []rune) (rune, bool) {
	if len(ranges) == 0 {
		return 0, false
	}
	in := func(r rune) bool {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= r && r <= ranges[i+1] {
				return true
			}
		}
		return false
	}
	for _, r := range "xa0" {
		if in(r) {
			return r, true
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r-ranges[i] < 128; r++ {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return r, true
			}
		}
	}
	return ranges[0], true
}
