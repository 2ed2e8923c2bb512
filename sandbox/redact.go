package sandbox

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
	"unicode/utf16"
)

// Redacted replaces every secret the Redactor removes.
const Redacted = "[REDACTED]"

// RedactMinLen is the shortest value SecretValues treats as a secret:
// shorter values (a "1", a port) would blank out ordinary text.
const RedactMinLen = 8

// SecretValues returns the values in env that are secrets by default: those
// of variables that SecretBearing says bear one, when at least RedactMinLen
// long.
func SecretValues(env map[string]string) []string {
	var out []string
	for name, v := range env {
		if len(v) >= RedactMinLen && SecretBearing(name, v) && !strings.EqualFold(name, "NO_PROXY") {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Redactor removes secrets from text: each value, and its base64 (standard
// and URL alphabets, with and without padding, also where it sits at any
// offset inside a longer encoded string such as a Basic credential),
// URL-encoded (query and path) and JSON-escaped forms (see secretForms). It
// is safe for concurrent use.
type Redactor struct {
	patterns [][]byte             // every form, longest first
	starts   [1 << 16 / 64]uint64 // bit set of the patterns' first two bytes
	byStart  map[uint16][]int     // pattern indexes by first two bytes
	short    []int                // one-byte patterns
	maxLen   int                  // longest pattern
	repl     *strings.Replacer    // the same patterns, for whole strings
}

// NewRedactor returns a Redactor for secrets. Every non-empty value is
// removed however short: the caller chooses what is secret (SecretValues
// applies the default rule).
func NewRedactor(secrets ...string) *Redactor {
	seen := map[string]bool{}
	var forms []string
	for _, s := range secrets {
		for _, f := range secretForms(s) {
			if !seen[f] {
				seen[f] = true
				forms = append(forms, f)
			}
		}
	}
	// Longest first, so a longer form wins over a shorter one it contains.
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	r := &Redactor{byStart: map[uint16][]int{}}
	var pairs []string
	for i, f := range forms {
		r.patterns = append(r.patterns, []byte(f))
		if len(f) == 1 {
			r.short = append(r.short, i)
		} else {
			k := uint16(f[0])<<8 | uint16(f[1])
			r.starts[k/64] |= 1 << (k % 64)
			r.byStart[k] = append(r.byStart[k], i)
		}
		r.maxLen = max(r.maxLen, len(f))
		pairs = append(pairs, f, Redacted)
	}
	r.repl = strings.NewReplacer(pairs...)
	return r
}

// secretForms returns s and the forms it takes when encoded: URL-escaped
// (query and path, the escapes' hex digits in upper and in lower case),
// JSON-escaped (with and without HTML escapes, '/' as itself and as
// "\/", and as .NET's and Gson's encoders escape by default), base64
// (base64Forms), and the encodings that rewrite every byte (wholeForms).
// s itself comes first; an empty s has no forms.
func secretForms(s string) []string {
	if s == "" {
		return nil
	}
	query, path := url.QueryEscape(s), url.PathEscape(s)
	jsonPlain, jsonHTML := jsonEscape(s, false), jsonEscape(s, true)
	forms := []string{s, query, path, lowerHexEscapes(query), lowerHexEscapes(path), jsonPlain, jsonHTML,
		// '/' as "\/", as PHP's json_encode and others write it.
		strings.ReplaceAll(jsonPlain, "/", `\/`), strings.ReplaceAll(jsonHTML, "/", `\/`),
		// .NET's System.Text.Json by default, and Gson by default.
		unicodeEscaped(jsonPlain, "<>&'+`", "%04X"), unicodeEscaped(jsonPlain, "<>&='", "%04x")}
	forms = append(forms, base64Forms(s)...)
	forms = append(forms, wholeForms(s)...)
	out := forms[:1]
	for _, f := range forms[1:] {
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// base64Forms returns s's base64 encodings: both alphabets, padded and
// not, and the parts that do not depend on its neighbours inside longer
// data (shiftedBase64).
func base64Forms(s string) []string {
	var forms []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		forms = append(forms, enc.EncodeToString([]byte(s)), enc.WithPadding(base64.NoPadding).EncodeToString([]byte(s)))
		forms = append(forms, shiftedBase64(enc, s)...)
	}
	return forms
}

// wholeForms returns the encodings of s that rewrite every byte, each as
// its encoders write it: hex (lower and upper case), UTF-16 (little- and
// big-endian), HTML numeric character references (decimal, and hex with
// "x" or "X" and digits in either case), percent-encoding of every byte
// (hex digits in either case) and \u escapes of every character.
func wholeForms(s string) []string {
	eachByte := func(format string) string {
		var b strings.Builder
		for i := range len(s) {
			fmt.Fprintf(&b, format, s[i])
		}
		return b.String()
	}
	eachRune := func(format string) string {
		var b strings.Builder
		for _, r := range s {
			fmt.Fprintf(&b, format, r)
		}
		return b.String()
	}
	var le, be []byte
	for _, u := range utf16.Encode([]rune(s)) {
		le, be = binary.LittleEndian.AppendUint16(le, u), binary.BigEndian.AppendUint16(be, u)
	}
	return []string{eachByte("%02x"), eachByte("%02X"), string(le), string(be),
		eachRune("&#%d;"), eachRune("&#x%x;"), eachRune("&#x%X;"), eachRune("&#X%x;"), eachRune("&#X%X;"),
		eachByte("%%%02X"), eachByte("%%%02x"), eachRune(`\u%04x`), eachRune(`\u%04X`)}
}

// unicodeEscaped returns s, JSON-escaped, with each character of chars
// written as a \u escape, its hex digits formatted by hexFormat: the
// characters some JSON encoders escape beyond what Go's does.
func unicodeEscaped(s, chars, hexFormat string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(chars, c) {
			fmt.Fprintf(&b, `\u`+hexFormat, c)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// lowerHexEscapes returns s, a percent-encoded string, with the hex digits
// of its escapes in lower case, as some encoders write them ("%2f").
func lowerHexEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerHex(b[i+1]), lowerHex(b[i+2])
			i += 2
		}
	}
	return string(b)
}

// lowerHex returns c in lower case if it is an upper-case hex digit.
func lowerHex(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// shiftedBase64 returns the parts of the encodings of s that do not depend
// on what surrounds it, for s starting at each offset (0, 1, 2) modulo 3
// inside longer data: the whole groups of four characters that encode only
// bytes of s. Parts shorter than RedactMinLen are dropped.
func shiftedBase64(enc *base64.Encoding, s string) []string {
	var out []string
	for k := range 3 {
		data := append(make([]byte, k), s...)
		e := enc.EncodeToString(data)
		start := 0
		if k > 0 {
			start = 4 // the first group mixes in the k bytes before s
		}
		end := 4 * (len(data) / 3) // a last, partial group mixes in what follows
		if end-start >= RedactMinLen {
			out = append(out, e[start:end])
		}
	}
	return out
}

// jsonEscape returns s as it appears inside a JSON string, with <, > and &
// as \u escapes when html is set (as encoding/json writes by default).
func jsonEscape(s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	enc.Encode(s)
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// String returns s with every secret replaced by Redacted.
func (r *Redactor) String(s string) string {
	if r == nil || len(r.patterns) == 0 {
		return s
	}
	return r.repl.Replace(s)
}

// match returns the length of the longest pattern starting at b[0], or 0.
func (r *Redactor) match(b []byte) int {
	if len(b) >= 2 {
		k := uint16(b[0])<<8 | uint16(b[1])
		if r.starts[k/64]&(1<<(k%64)) != 0 {
			for _, i := range r.byStart[k] {
				if bytes.HasPrefix(b, r.patterns[i]) {
					return len(r.patterns[i])
				}
			}
		}
	}
	for _, i := range r.short {
		if b[0] == r.patterns[i][0] {
			return 1
		}
	}
	return 0
}

// redact appends to dst the redacted form of b[:limit], where every secret
// starting before limit lies wholly in b, and returns dst and how much of b
// it consumed (at least limit, more when a secret crosses limit).
func (r *Redactor) redact(dst, b []byte, limit int) ([]byte, int) {
	i, last := 0, 0
	for i < limit {
		n := r.match(b[i:])
		if n == 0 {
			i++
			continue
		}
		dst = append(dst, b[last:i]...)
		dst = append(dst, Redacted...)
		i += n
		last = i
	}
	return append(dst, b[last:i]...), i
}

// Writer returns a writer that redacts what passes through it to w. It
// holds back the last few bytes of each write until it knows they do not
// begin a secret, so a secret split across writes is still removed: call
// Close (or Flush) to write what is held back. The writer is safe for
// concurrent use.
func (r *Redactor) Writer(w io.Writer) *RedactWriter {
	return &RedactWriter{r: r, w: w}
}

// RedactWriter is the writer Redactor.Writer returns.
type RedactWriter struct {
	r   *Redactor
	w   io.Writer
	mu  sync.Mutex
	buf []byte // held back: may be the start of a secret
	out []byte // scratch for redacted output
}

// Write redacts p and writes all that is known to be complete. It reports
// len(p) on success: every byte of p was taken.
func (rw *RedactWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.r == nil || len(rw.r.patterns) == 0 {
		return rw.w.Write(p)
	}
	rw.buf = append(rw.buf, p...)
	// A secret starting before limit ends within buf.
	limit := len(rw.buf) - (rw.r.maxLen - 1)
	if limit <= 0 {
		return len(p), nil
	}
	var used int
	rw.out, used = rw.r.redact(rw.out[:0], rw.buf, limit)
	rw.buf = rw.buf[:copy(rw.buf, rw.buf[used:])]
	if _, err := rw.w.Write(rw.out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush redacts and writes everything held back. Only call it where no
// secret can continue, e.g. at a line or message boundary; Close does.
func (rw *RedactWriter) Flush() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if len(rw.buf) == 0 {
		return nil
	}
	rw.out, _ = rw.r.redact(rw.out[:0], rw.buf, len(rw.buf))
	rw.buf = rw.buf[:0]
	_, err := rw.w.Write(rw.out)
	return err
}

// Close flushes. It does not close the underlying writer.
func (rw *RedactWriter) Close() error { return rw.Flush() }
