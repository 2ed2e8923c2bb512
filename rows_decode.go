package pairbench

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// rowDecoder is the fast path of the rows reader: a scanner over the known
// fields of a row that decodes the lines a trial writes without reflection
// and shares the strings that repeat from row to row (intent, arm, tool
// names, ...).
//
// It never rejects a line. It either decodes it into exactly the Row that
// encoding/json would (FuzzRowDecoder checks this), or gives up, and
// encoding/json decides, errors included. It gives up on anything a trial
// does not write: an unknown, repeated or differently cased key, an escape
// in a key, null, a number that needs care, a surrogate escape, invalid
// UTF-8, anything after the object, and on every syntax error.
//
// A rowDecoder is not safe for concurrent use.
type rowDecoder struct {
	names   map[string]string // shared strings, at most maxNames
	scratch []byte            // a string with escapes, decoded
	// recent holds the last run id, intent and domain read: rows come in
	// runs of the same ones.
	recent [3]string
	// checked is the last array of strings checked and not kept (the
	// declared tools, the same in every row of an agent), as it stood in
	// its line: the same bytes again are the same valid array.
	checked []byte
}

// Indexes into rowDecoder.recent.
const (
	recentRunID = iota
	recentIntent
	recentDomain
)

const (
	// maxNames bounds the shared strings a decoder keeps: a rows file of
	// ever new names costs allocations, never memory.
	maxNames = 1 << 13
	// maxNameLen is the longest string shared.
	maxNameLen = 96
	// maxDepth is the deepest nesting of an extracted answer the fast path
	// decodes (encoding/json's own limit is 10,000).
	maxDepth = 200
)

func newRowDecoder() *rowDecoder { return &rowDecoder{names: make(map[string]string)} }

// rowScan is one line being decoded.
type rowScan struct {
	d    *rowDecoder
	b    []byte
	i    int
	skip RowFields
}

// decode decodes the whole trimmed line b into the zero Row at row, leaving
// the fields in skip empty, and reports false when encoding/json must
// decide instead (row is then garbage).
func (d *rowDecoder) decode(b []byte, row *Row, skip RowFields) bool {
	s := rowScan{d: d, b: b, skip: skip}
	if !s.row(row) {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

// kept returns p, or nil when the field f is skipped.
func kept[T any](s *rowScan, f RowFields, p *T) *T {
	if s.skip&f != 0 {
		return nil
	}
	return p
}

func (s *rowScan) row(r *Row) bool {
	return s.fields(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "v":
			return 1 << 0, s.int(&r.V)
		case "run_id":
			return 1 << 1, s.recentName(&r.RunID, recentRunID)
		case "intent":
			return 1 << 2, s.recentName(&r.Intent, recentIntent)
		case "domain":
			return 1 << 3, s.recentName(&r.Domain, recentDomain)
		case "stage":
			return 1 << 4, s.name((*string)(&r.Stage))
		case "pair":
			return 1 << 5, s.int(&r.Pair)
		case "order":
			return 1 << 6, s.name((*string)(&r.Order))
		case "arm":
			return 1 << 7, s.name((*string)(&r.Arm))
		case "attempt":
			return 1 << 8, s.int(&r.Attempt)
		case "trial_dir":
			return 1 << 9, s.text(kept(s, FieldTrialDir, &r.TrialDir))
		case "outcome":
			return 1 << 10, s.name((*string)(&r.Outcome))
		case "reason":
			return 1 << 11, s.text(kept(s, FieldReason, &r.Reason))
		case "answer":
			return 1 << 12, s.answer(&r.Answer)
		case "wall_seconds":
			return 1 << 13, s.float(&r.WallSeconds)
		case "start_delay_ms":
			return 1 << 14, s.int64(&r.StartDelayMS)
		case "turns":
			return 1 << 15, s.int(&r.Turns)
		case "input_tokens":
			return 1 << 16, s.int64(&r.InputTokens)
		case "output_tokens":
			return 1 << 17, s.int64(&r.OutputTokens)
		case "cost_usd":
			return 1 << 18, s.float(&r.CostUSD)
		case "caps_hit":
			return 1 << 19, s.caps(&r.CapsHit)
		case "tools_declared":
			return 1 << 20, s.names(kept(s, FieldToolsDeclared, &r.ToolsDeclared))
		case "webmcp":
			return 1 << 21, s.invocations(&r.WebMCP)
		case "native_tools":
			return 1 << 22, s.names(&r.NativeTools)
		case "unregistered":
			return 1 << 23, s.failures(kept(s, FieldUnregistered, &r.Unregistered))
		case "adopted":
			return 1 << 24, s.bool(&r.Adopted)
		case "error":
			return 1 << 25, s.text(kept(s, FieldError, &r.Error))
		case "started_at":
			return 1 << 26, s.text(kept(s, FieldStartedAt, &r.StartedAt))
		case "browser_refusals":
			return 1 << 27, s.int(&r.BrowserRefusals)
		case "webmcp_impl":
			return 1 << 28, s.name((*string)(&r.WebMCPImpl))
		case "startup_seconds":
			return 1 << 29, s.float(&r.StartupSeconds)
		case "webmcp_env":
			return 1 << 30, s.webmcpEnv(&r.WebMCPEnv)
		case "browser_webmcp":
			return 1 << 31, objects(s, &r.BrowserWebMCP, func(c *BrowserCall, key []byte) (uint32, bool) {
				switch string(key) {
				case "tool":
					return 1, s.name(&c.Tool)
				case "status":
					return 2, s.name(&c.Status)
				}
				return 0, false
			})
		}
		return 0, false
	})
}

// webmcpEnv reads a WebMCP environment; null is encoding/json's to decide.
func (s *rowScan) webmcpEnv(out **WebMCPEnv) bool {
	if s.peek() != '{' {
		return false
	}
	e := new(WebMCPEnv)
	*out = e
	return s.fields(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "browser":
			return 1, s.name(&e.Browser)
		case "switches":
			return 2, s.names(&e.Switches)
		case "devtools_webmcp":
			return 4, s.bool(&e.DevTools)
		case "mode":
			return 16, s.name((*string)(&e.Mode))
		case "page_native":
			return 32, s.bool(&e.PageNative)
		case "origin_trials":
			return 64, objects(s, &e.OriginTrials, func(o *OriginTrial, key []byte) (uint32, bool) {
				switch string(key) {
				case "name":
					return 1, s.name(&o.Name)
				case "status":
					return 2, s.name(&o.Status)
				}
				return 0, false
			})
		case "frame_tools":
			if s.peek() != '{' {
				return 8, false
			}
			e.FrameTools = map[string][]string{}
			return 8, s.object(s.key, func(key []byte) bool {
				if _, dup := e.FrameTools[string(key)]; dup {
					return false // encoding/json's to decide
				}
				var tools []string
				ok := s.names(&tools)
				e.FrameTools[string(key)] = tools
				return ok
			})
		}
		return 0, false
	})
}

func (s *rowScan) answer(a *Answer) bool {
	return s.fields(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "raw":
			return 1, s.text(kept(s, FieldRaw, &a.Raw))
		case "extracted":
			if s.peek() != '{' {
				return 2, false // null and non-objects: encoding/json's to decide
			}
			if s.skip&FieldExtracted != 0 {
				return 2, s.skipValue(0)
			}
			v, ok := s.value(0)
			a.Extracted, _ = v.(map[string]any)
			return 2, ok
		}
		return 0, false
	})
}

func (s *rowScan) invocations(out *[]Invocation) bool {
	return objects(s, out, func(inv *Invocation, key []byte) (uint32, bool) {
		switch string(key) {
		case "tool":
			return 1, s.name(&inv.Tool)
		case "status":
			return 2, s.name(&inv.Status)
		case "error":
			return 4, s.name(&inv.Error)
		case "ms":
			return 8, s.int64(&inv.MS)
		case "registered":
			return 16, s.bool(&inv.Registered)
		}
		return 0, false
	})
}

// failures reads registration failures; with out nil it only checks them.
func (s *rowScan) failures(out *[]RegistrationFailure) bool {
	if out == nil {
		out = new([]RegistrationFailure) // rare: read and dropped
	}
	return objects(s, out, func(rf *RegistrationFailure, key []byte) (uint32, bool) {
		switch string(key) {
		case "tool":
			return 1, s.name(&rf.Tool)
		case "file":
			return 2, s.name(&rf.File)
		case "line":
			return 4, s.int(&rf.Line)
		case "url":
			return 8, s.name(&rf.URL)
		case "error":
			return 16, s.name(&rf.Error)
		}
		return 0, false
	})
}

// objects reads an array of objects into out, each object's keys read by
// field.
func objects[T any](s *rowScan, out *[]T, field func(v *T, key []byte) (uint32, bool)) bool {
	*out = make([]T, 0, 1)
	return s.array(func() bool {
		var zero T
		*out = append(*out, zero)
		v := &(*out)[len(*out)-1]
		return s.fields(func(key []byte) (uint32, bool) { return field(v, key) })
	})
}

// names reads an array of strings; with out nil it only checks it, and
// an array of the same bytes as the last one it checked is passed over.
func (s *rowScan) names(out *[]string) bool {
	if out == nil {
		if c := s.d.checked; len(c) > 0 && bytes.HasPrefix(s.b[s.i:], c) {
			s.i += len(c)
			return true
		}
		start := s.i
		if !s.array(s.checkStr) {
			return false
		}
		s.d.checked = append(s.d.checked[:0], s.b[start:s.i]...)
		return true
	}
	*out = make([]string, 0, 16)
	return s.array(func() bool {
		var v string
		ok := s.name(&v)
		*out = append(*out, v)
		return ok
	})
}

func (s *rowScan) caps(out *[]Cap) bool {
	*out = make([]Cap, 0, 1)
	return s.array(func() bool {
		var v string
		ok := s.name(&v)
		*out = append(*out, Cap(v))
		return ok
	})
}

// fields reads an object of known keys: field reads the value of key and
// returns the key's bit, unique among the object's keys, so that a repeated
// key is left to encoding/json (it merges some values and replaces others).
func (s *rowScan) fields(field func(key []byte) (bit uint32, ok bool)) bool {
	var seen uint32
	return s.object(s.key, func(key []byte) bool {
		bit, ok := field(key)
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
}

// ws skips JSON white space.
func (s *rowScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, 0 at the end.
func (s *rowScan) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// object reads an object, each key by readKey, calling field after each
// key with the scanner at its value.
func (s *rowScan) object(readKey func() ([]byte, bool), field func(key []byte) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		s.ws()
		key, ok := readKey()
		if !ok || s.peek() != ':' {
			return false
		}
		s.i++
		s.ws()
		if !field(key) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// array reads an array, calling elem with the scanner at each element.
func (s *rowScan) array(elem func() bool) bool {
	if s.peek() != '[' {
		return false
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		s.ws()
		if !elem() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// key reads an object key without escapes, as it is in the input.
func (s *rowScan) key() ([]byte, bool) {
	v, plain, ok := s.plainStr()
	return v, ok && plain
}

// str reads a string and returns its decoded bytes, valid until the next
// call.
func (s *rowScan) str() ([]byte, bool) {
	start := s.i + 1
	v, plain, ok := s.plainStr()
	switch {
	case !ok:
		return nil, false
	case plain:
		return v, true
	}
	if k := bytes.IndexByte(v, '\\'); k >= 0 {
		if hasControl(v[:k]) {
			return nil, false
		}
		return s.escaped(start, start+k)
	}
	return v, validText(v)
}

// validText reports whether b may stand unescaped in a JSON string: no
// control character, valid UTF-8.
func validText(b []byte) bool { return !hasControl(b) && utf8.Valid(b) }

// plainStr reads a string up to its first quote and reports whether it is
// plain ASCII: no escape, no control character, nothing above 0x7f; then
// it is the string's value. Otherwise str decides.
func (s *rowScan) plainStr() (v []byte, plain, ok bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, false
	}
	start := s.i + 1
	end, plain := quoteEnd(s.b[start:])
	if end < 0 {
		return nil, false, false
	}
	v = s.b[start : start+end]
	s.i = start + end + 1
	return v, plain, true
}

// quoteEnd returns the index of the first quote in b (-1 for none) and
// whether the bytes before it are printable ASCII without a backslash. It
// reads eight bytes at a time: in each word, the lowest byte flagged as a
// quote is one, and a byte flagged as not plain below it means one is
// there (a flag can only spill upward, from a flagged byte).
func quoteEnd(b []byte) (end int, plain bool) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	j := 0
	for ; j+8 <= len(b); j += 8 {
		w := binary.LittleEndian.Uint64(b[j:])
		q := w ^ (ones * '"')
		quotes := (q - ones) &^ q & highs
		bs := w ^ (ones * '\\')
		// A byte ≥ 0x80, a byte < 0x20, a backslash.
		bad := (w | (w - ones*0x20) | (bs-ones)&^bs) & highs
		if quotes != 0 {
			k := bits.TrailingZeros64(quotes) / 8
			return j + k, bad&(1<<(8*k)-1) == 0
		}
		if bad != 0 {
			end := bytes.IndexByte(b[j:], '"')
			if end < 0 {
				return -1, false
			}
			return j + end, false
		}
	}
	for ; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j, true
		case c < 0x20 || c >= utf8.RuneSelf || c == '\\':
			end := bytes.IndexByte(b[j:], '"')
			if end < 0 {
				return -1, false
			}
			return j + end, false
		}
	}
	return -1, false
}

// hasControl reports whether b holds a byte below 0x20.
func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// escaped reads the rest of a string from its first escape at j into the
// decoder's scratch buffer.
func (s *rowScan) escaped(start, j int) ([]byte, bool) {
	buf := append(s.d.scratch[:0], s.b[start:j]...)
	defer func() { s.d.scratch = buf[:0] }()
	for j < len(s.b) {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			return buf, utf8.Valid(buf)
		case c < 0x20:
			return nil, false
		case c != '\\':
			buf = append(buf, c)
			j++
			continue
		}
		if j+1 >= len(s.b) {
			return nil, false
		}
		switch e := s.b[j+1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			if j+6 > len(s.b) {
				return nil, false
			}
			r, err := strconv.ParseUint(string(s.b[j+2:j+6]), 16, 32)
			if err != nil || (r >= 0xD800 && r < 0xE000) {
				return nil, false // a surrogate half: encoding/json pairs or replaces it
			}
			buf = utf8.AppendRune(buf, rune(r))
			j += 6
			continue
		default:
			return nil, false
		}
		j += 2
	}
	return nil, false
}

// checkStr checks a string as str reads it, and ends after it as str
// does, without decoding it: for a value nobody keeps. An escape decodes
// to whole characters, so the decoded string is valid UTF-8 exactly when
// the characters between the escapes are.
func (s *rowScan) checkStr() bool {
	start := s.i + 1
	_, plain, ok := s.plainStr()
	if !ok || plain {
		return ok
	}
	b := s.b
	for j := start; j < len(b); {
		switch c := b[j]; {
		case c == '"':
			s.i = j + 1
			return true
		case c < 0x20:
			return false
		case c < utf8.RuneSelf && c != '\\':
			j++
		case c != '\\':
			r, size := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && size == 1 {
				return false
			}
			j += size
		case j+1 >= len(b):
			return false
		default:
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(b) {
					return false
				}
				r, err := strconv.ParseUint(string(b[j+2:j+6]), 16, 32)
				if err != nil || (r >= 0xD800 && r < 0xE000) {
					return false // as escaped: encoding/json's to decide
				}
				j += 6
			default:
				return false
			}
		}
	}
	return false
}

// text reads a string that rarely repeats; with out nil it only checks it.
func (s *rowScan) text(out *string) bool {
	if out == nil {
		return s.checkStr()
	}
	v, ok := s.str()
	*out = string(v)
	return ok
}

// name reads a string that often repeats, shared between rows.
func (s *rowScan) name(out *string) bool {
	v, ok := s.str()
	*out = s.d.share(v)
	return ok
}

// recentName is name for a field whose value is often the last row's.
func (s *rowScan) recentName(out *string, k int) bool {
	v, ok := s.str()
	if last := s.d.recent[k]; string(v) == last {
		*out = last
	} else {
		*out = s.d.share(v)
		s.d.recent[k] = *out
	}
	return ok
}

// share returns b as a string, the same string for the same bytes while
// the decoder has room.
func (d *rowDecoder) share(b []byte) string {
	if v, ok := vocabulary(b); ok {
		return v
	}
	if len(b) > maxNameLen {
		return string(b)
	}
	if v, ok := d.names[string(b)]; ok {
		return v
	}
	if len(d.names) == maxNames {
		clear(d.names) // start over rather than grow
	}
	v := string(b)
	d.names[v] = v
	return v
}

// vocabulary returns the word of the rows' fixed vocabulary that b spells.
func vocabulary(b []byte) (string, bool) {
	switch string(b) {
	case "":
		return "", true
	case string(StagePair):
		return string(StagePair), true
	case string(StageAdoption):
		return string(StageAdoption), true
	case string(AB):
		return string(AB), true
	case string(BA):
		return string(BA), true
	case string(Control):
		return string(Control), true
	case string(Treatment):
		return string(Treatment), true
	case string(Correct):
		return string(Correct), true
	case string(Wrong):
		return string(Wrong), true
	case string(Malformed):
		return string(Malformed), true
	case string(Crashed):
		return string(Crashed), true
	case string(Timeout):
		return string(Timeout), true
	case string(Aborted):
		return string(Aborted), true
	case string(CapTime):
		return string(CapTime), true
	case string(CapTurns):
		return string(CapTurns), true
	case string(CapSpend):
		return string(CapSpend), true
	case "ok":
		return "ok", true
	case "error":
		return "error", true
	}
	return "", false
}

func (s *rowScan) bool(out *bool) bool {
	switch {
	case s.lit("true"):
		*out = true
	case s.lit("false"):
		*out = false
	default:
		return false
	}
	return true
}

func (s *rowScan) lit(word string) bool {
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// number reads a number literal as JSON's grammar defines it, and reports
// whether it is an integer (no fraction, no exponent).
func (s *rowScan) number() (lit []byte, integer, ok bool) {
	b, j := s.b, s.i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	default:
		return nil, false, false
	}
	integer = true
	if j < len(b) && b[j] == '.' {
		integer = false
		j++
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == k {
			return nil, false, false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		integer = false
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == k {
			return nil, false, false
		}
	}
	lit, s.i = b[s.i:j], j
	return lit, integer, true
}

func (s *rowScan) int64(out *int64) bool {
	lit, integer, ok := s.number()
	if !ok || !integer {
		return false // a fraction or exponent into an integer field: encoding/json's error
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	*out = n
	return err == nil
}

func (s *rowScan) int(out *int) bool {
	var n int64
	ok := s.int64(&n)
	*out = int(n)
	return ok && int64(*out) == n
}

func (s *rowScan) float(out *float64) bool {
	lit, _, ok := s.number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	*out = f
	return err == nil
}

// value reads any JSON value as encoding/json decodes it into an any:
// objects as map[string]any, arrays as []any, numbers as float64.
func (s *rowScan) value(depth int) (any, bool) {
	if depth > maxDepth {
		return nil, false
	}
	switch s.peek() {
	case '{':
		m := make(map[string]any)
		ok := s.objectAny(func(key string) bool {
			v, ok := s.value(depth + 1)
			m[key] = v
			return ok
		})
		return m, ok
	case '[':
		out := make([]any, 0, 4)
		ok := s.array(func() bool {
			v, ok := s.value(depth + 1)
			out = append(out, v)
			return ok
		})
		return out, ok
	case '"':
		v, ok := s.str()
		return s.d.share(v), ok
	case 't':
		return true, s.lit("true")
	case 'f':
		return false, s.lit("false")
	case 'n':
		return nil, s.lit("null")
	}
	lit, _, ok := s.number()
	if !ok {
		return nil, false
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	return f, err == nil
}

// objectAny reads an object of an any value, whose keys may hold escapes.
// A repeated key keeps its last value, as in encoding/json.
func (s *rowScan) objectAny(field func(key string) bool) bool {
	return s.object(s.str, func(key []byte) bool { return field(s.d.share(key)) })
}

// skipValue checks any JSON value as value reads it, keeping nothing.
func (s *rowScan) skipValue(depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch s.peek() {
	case '{':
		return s.object(func() ([]byte, bool) { return nil, s.checkStr() }, func([]byte) bool { return s.skipValue(depth + 1) })
	case '[':
		return s.array(func() bool { return s.skipValue(depth + 1) })
	case '"':
		return s.checkStr()
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	}
	lit, _, ok := s.number()
	if !ok {
		return false
	}
	_, err := strconv.ParseFloat(string(lit), 64)
	return err == nil
}
