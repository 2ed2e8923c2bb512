package pairbench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// demoLines returns the lines of the committed example run.
func demoLines(t testing.TB) [][]byte {
	data, err := os.ReadFile("examples/runs/demo/rows.jsonl")
	require.NoError(t, err)
	return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}

// trialLine is a row as a real trial writes it: the agent's declared tools,
// unrounded times, a pretty-printed answer.
const trialLine = `{"v":1,"run_id":"gh-4242","intent":"books-count-by-author","domain":"books.example","stage":"pair","pair":0,"order":"BA","arm":"treatment","attempt":1,"trial_dir":"trials/books-count-by-author/0-treatment","outcome":"correct","answer":{"raw":"I found the answer using the page's find_books tool.\n\n` + "```" + `json\n{\n  \"count\": 7,\n  \"titles\": [\n    \"Dust Choir\",\n    \"Iron Psalms\"\n  ]\n}\n` + "```" + `","extracted":{"count":7,"titles":["Dust Choir","Iron Psalms"]}},"wall_seconds":7.35584622,"start_delay_ms":9,"turns":3,"input_tokens":2608,"output_tokens":63,"cost_usd":0.008769,"tools_declared":["mcp__browser__browser_handle_dialog","mcp__browser__browser_find","mcp__pairbench__webmcp"],"webmcp":[{"tool":"find_books","status":"ok","ms":766,"registered":true}],"unregistered":[{"tool":"list_genre","file":"domains/books.example/tools/list_genre.js","line":3,"url":"http://books.example/","error":"SyntaxError: Unexpected token"}],"adopted":true,"browser_refusals":1,"webmcp_impl":"polyfill","webmcp_env":{"browser":"Chrome/156.0.8078.114","switches":["--enable-blink-features=WebMCP"],"devtools_webmcp":true,"frame_tools":{"F1":["find_books","shop_hours"]},"mode":"native","page_native":true,"origin_trials":[{"name":"WebMCP","status":"ValidTokenNotProvided"}]},"browser_webmcp":[{"tool":"find_books","status":"Completed"},{"tool":"find_books"}],"started_at":"2026-12-01T12:22:06Z"}`

// oddLines are lines the fast path must hand to encoding/json, or decode
// exactly as it does: every quirk of encoding/json a row can meet.
var oddLines = []string{
	`{"v":1,"intent":"i","arm":"control","outcome":"correct","stage":"pair","order":"AB","attempt":1}`,
	`{"V":1,"Intent":"i","ARM":"control","outcome":"correct","stage":"pair","order":"AB","attempt":1}`, // keys match case-insensitively
	`{"v":1,"intent":"i","intent":"j","arm":"control","outcome":"correct","stage":"pair","order":"AB","attempt":1}`,
	`{"v":1,"intent":"i","arm":"control","outcome":"correct","stage":"pair","order":"AB","attempt":1,"extra":[1,{"a":null}]}`,
	`{"v":1,"intent":null,"arm":"control"}`,
	`{"v":1.0,"intent":"i"}`, `{"v":1e0,"intent":"i"}`, `{"v":-0,"intent":"i"}`, `{"v":01}`, `{"v":99999999999999999999}`,
	`{"v":1,"wall_seconds":1e400}`, `{"v":1,"wall_seconds":-0.0,"cost_usd":1E-3}`, `{"v":1,"wall_seconds":"1"}`,
	`{"v":1,"intent":"\ud83d\ude00 \ud800 \u00e9\u0000\/\b\f\n\r\t\"\\"}`,
	`{"v":1,"intent":"\u12G4"}`, `{"v":1,"intent":"\x"}`, "{\"v\":1,\"intent\":\"a\tb\"}",
	"{\"v\":1,\"intent\":\"\xff\xfe\"}", "{\"v\":1,\"intent\":\"\xe2\x80\xa8 caf\xc3\xa9\"}",
	`{"v":1,"intent":"i"}]`, `{"v":1,"intent":"i"}}`, `{"v":1,"intent":"i"} {"v":1}`, `{"v":1,"intent":"i"},`,
	`{"v":1,"answer":{"extracted":{"a":1,"a":{"b":[true,false,null,"x",-2.5e3]}},"raw":""}}`,
	`{"v":1,"answer":{"extracted":{"k\u00e9y":"v","":[]}}}`, `{"v":1,"answer":{"extracted":null}}`,
	`{"v":1,"answer":{"extracted":[]}}`, `{"v":1,"answer":{"extracted":{}}}`, `{"v":1,"answer":{}}`,
	`{"v":1,"caps_hit":[],"tools_declared":[],"webmcp":[],"native_tools":[],"unregistered":[]}`,
	`{"v":1,"caps_hit":["time","magic"],"webmcp":[{"tool":"t","status":"error","error":"e","ms":3,"registered":false},{}]}`,
	`{"v":1,"webmcp":[{"tool":"t","tool":"u"}]}`, `{"v":1,"webmcp":[{"Tool":"t"}]}`, `{"v":1,"webmcp":[null]}`,
	`{"v":1,"tools_declared":[1]}`, `{"v":1,"tools_declared":"a"}`, `{"v":1,"adopted":1}`, `{"v":1,"adopted":tru}`,
	`{"v":1,"webmcp_impl":"remote"}`, `{"v":1,"webmcp_impl":null}`, `{"v":1,"webmcp_impl":true}`, `{"v":1,"browser_refusals":-1}`,
	`{"v":1,"webmcp_env":null}`, `{"v":1,"webmcp_env":{}}`, `{"v":1,"webmcp_env":{"frame_tools":{}}}`, `{"v":1,"webmcp_env":{"frame_tools":{"a":["x"],"a":["y"]}}}`,
	`{"v":1,"webmcp_env":{"frame_tools":{"a":null}}}`, `{"v":1,"webmcp_env":{"frame_tools":[]}}`, `{"v":1,"webmcp_env":{"switches":[1]}}`,
	`{"v":1,"webmcp_env":{"mode":"remote"}}`, `{"v":1,"webmcp_env":{"mode":1,"page_native":"yes"}}`, `{"v":1,"webmcp_env":{"origin_trials":[{"name":"t"},null,{"status":2}]}}`,
	`{"v":1,"browser_webmcp":[]}`, `{"v":1,"browser_webmcp":[{"tool":"t","status":"Error"},{}]}`, `{"v":1,"browser_webmcp":[{"tool":1}]}`,
	`{"v":1,"pair":-3,"attempt":0}`, `{"v" : 1 , "intent" : "i" }`, "{\"v\":1,\r\"intent\":\"i\"}",
	`{"v":1,"intent":"i",}`, `{"v":1,"intent":"i"`, `{"v":1,,"intent":"i"}`, `{"v":1 "intent":"i"}`, `{}`, `[]`, `"x"`, `{`,
	`{"v":1,"answer":{"extracted":{"a":[1,2,]}}}`, `{"v":1,"answer":{"extracted":{"a":01}}}`, `{"v":1,"answer":{"extracted":{"a":1.}}}`,
	`{"v":1,"answer":{"extracted":{"a":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}}}`,
	`{"v":1,"answer":{"extracted":{"a":1e999}}}`, `{"v":1,"unregistered":[{"tool":"t","line":1.5}]}`,
}

// FuzzRowDecoder checks the fast path against encoding/json, the reference:
// where the fast path decodes a line, encoding/json decodes it too, into
// the same Row (less the skipped fields); and the reader's parse (fast
// path, else encoding/json, then Validate) fails exactly when encoding/json
// and Validate do, with the same message.
func FuzzRowDecoder(f *testing.F) {
	const all = FieldTrialDir | FieldReason | FieldRaw | FieldExtracted | FieldToolsDeclared | FieldUnregistered | FieldError | FieldStartedAt
	for i, l := range demoLines(f) {
		f.Add(l, uint16(i%2)*uint16(all))
	}
	f.Add([]byte(trialLine), uint16(0))
	f.Add([]byte(trialLine), uint16(all))
	for i, l := range oddLines {
		f.Add([]byte(l), uint16(i%3)*uint16(FieldExtracted|FieldToolsDeclared))
	}
	d := newRowDecoder()
	f.Fuzz(func(t *testing.T, line []byte, skipBits uint16) {
		skip := RowFields(skipBits) & all
		line = bytes.TrimSpace(line)
		var fast, ref Row
		ok := d.decode(line, &fast, skip)
		refErr := decodeRowJSON(line, &ref)
		ref.clear(skip)
		if ok {
			require.NoError(t, refErr, "the fast path decoded a line encoding/json rejects: %q", line)
			require.Equal(t, ref, fast, "the fast path and encoding/json disagree on %q (skipping %b)", line, skip)
		}
		if refErr == nil {
			refErr = ref.Validate()
		}
		var got Row
		err := d.parse(line, &got, skip)
		if refErr != nil {
			require.EqualError(t, err, refErr.Error(), "%q", line)
			return
		}
		require.NoError(t, err, "%q", line)
		require.Equal(t, ref, got, "%q", line)
	})
}

// TestRowDecoderFastPath: the lines trials write take the fast path (else
// the reader would be as slow as before), and the odd lines that must go to
// encoding/json do.
func TestRowDecoderFastPath(t *testing.T) {
	d := newRowDecoder()
	for i, l := range append(demoLines(t), []byte(trialLine)) {
		var fast, ref Row
		require.True(t, d.decode(l, &fast, 0), "line %d left the fast path: %s", i+1, l)
		require.NoError(t, decodeRowJSON(l, &ref))
		require.Equal(t, ref, fast, "line %d", i+1)
	}
	for _, l := range []string{
		`{"V":1}`, `{"v":1,"v":1}`, `{"v":1,"extra":0}`, `{"v":null}`, `{"v":1.0}`, `{"intent":"\ud800"}`,
		"{\"intent\":\"\xff\"}", "{\"intent\":\"a\x01\\n\"}", `{"v":1}]`, `{"answer":{"extracted":null}}`,
	} {
		var r Row
		assert.False(t, d.decode([]byte(l), &r, 0), "the fast path decoded %s", l)
	}
}

// TestRowDecoderShares: strings that repeat are one string, and a decoder
// keeps at most maxNames of them.
func TestRowDecoderShares(t *testing.T) {
	d := newRowDecoder()
	var a, b Row
	require.True(t, d.decode([]byte(trialLine), &a, 0))
	require.True(t, d.decode([]byte(trialLine), &b, 0))
	assert.Equal(t, unsafeData(a.Intent), unsafeData(b.Intent), "the intent is shared")
	assert.Equal(t, unsafeData(a.ToolsDeclared[0]), unsafeData(b.ToolsDeclared[0]), "a declared tool is shared")
	assert.NotEqual(t, unsafeData(a.TrialDir), unsafeData(b.TrialDir), "a trial directory is its own")
	for i := range 3 * maxNames {
		d.share(fmt.Appendf(nil, "name-%d", i))
		require.LessOrEqual(t, len(d.names), maxNames)
	}
}

// scanReference is ScanRows as a plain loop over lines with encoding/json:
// what the parallel reader must return for any stream.
func scanReference(data []byte, skip RowFields, fn func(*Row) error) (int, error) {
	lines := bytes.Split(data, []byte("\n"))
	for i, l := range lines {
		complete := i < len(lines)-1
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		var row Row
		err := decodeRowJSON(l, &row)
		if err == nil {
			err = row.Validate()
		}
		switch {
		case err == nil:
			row.clear(skip)
			if err := fn(&row); err != nil {
				return 0, err
			}
		case !complete:
			return i + 1, nil
		default:
			return 0, &RowError{Line: i + 1, Err: err}
		}
	}
	return 0, nil
}

// TestScanRowsAgreesWithReference runs ScanRows over streams of many blocks
// (with lines longer than a block, empty lines, a bad or partial line
// anywhere, short reads, an fn that fails, skipped fields) and compares the rows, in order,
// the partial line and the error with scanReference.
func TestScanRowsAgreesWithReference(t *testing.T) {
	demo := demoLines(t)
	long := bytes.Replace([]byte(trialLine), []byte(`"raw":"`), []byte(`"raw":"`+strings.Repeat("x", 3*blockSize/2)), 1)
	rng := rand.New(rand.NewPCG(14, 3))
	for round := range 16 {
		var data []byte
		n := 500 + rng.IntN(3000)
		for i := range n {
			switch k := rng.IntN(400); {
			case k == 0 && round%3 == 0:
				data = append(data, long...)
			case k == 1:
				data = append(data, "  \t"...)
			default:
				data = append(data, demo[(i+round)%len(demo)]...)
			}
			data = append(data, '\n')
		}
		switch round % 4 {
		case 1: // a bad line somewhere
			at := rng.IntN(len(data) - 1)
			data = append(append(append([]byte{}, data[:at]...), "\n{bad}\n"...), data[at:]...)
		case 2: // a partial last line
			data = append(data, demo[0][:len(demo[0])/2]...)
		case 3: // a valid last line without its newline
			data = append(data, demo[1]...)
		}
		failAt := -1
		if round%5 == 4 {
			failAt = rng.IntN(n)
		}
		collect := func(out *[]Row) func(*Row) error {
			return func(r *Row) error {
				if len(*out) == failAt {
					return errStop
				}
				*out = append(*out, *r)
				return nil
			}
		}
		var skip RowFields
		if round%3 == 1 {
			skip = FieldRaw | FieldExtracted | FieldToolsDeclared | FieldStartedAt
		}
		var want, got []Row
		wantPartial, wantErr := scanReference(data, skip, collect(&want))
		var r io.Reader = bytes.NewReader(data)
		if round%2 == 1 {
			r = iotest.HalfReader(r)
		}
		gotPartial, gotErr := ScanRows(r, skip, collect(&got))
		require.Equal(t, wantPartial, gotPartial, "round %d: partial line", round)
		if wantErr == nil {
			require.NoError(t, gotErr, "round %d", round)
		} else {
			require.EqualError(t, gotErr, wantErr.Error(), "round %d", round)
		}
		require.Equal(t, len(want), len(got), "round %d: rows", round)
		require.Equal(t, want, got, "round %d", round)
	}
}

var errStop = errors.New("stop")

// unsafeData is the address of s's bytes: equal for one shared string.
func unsafeData(s string) uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(s))) }

// TestScanRowsReadError: a read that fails after some lines gives those
// rows, then the error; the line it cut is not a row.
func TestScanRowsReadError(t *testing.T) {
	demo := demoLines(t)
	var data []byte
	for range 3000 {
		data = append(append(data, demo[5]...), '\n')
	}
	cut := 2*blockSize + 100 // inside a line
	boom := errors.New("disk on fire")
	r := io.MultiReader(bytes.NewReader(data[:cut]), iotest.ErrReader(boom))
	n := 0
	partial, err := ScanRows(bufio.NewReaderSize(r, 4096), 0, func(*Row) error { n++; return nil })
	require.ErrorIs(t, err, boom)
	assert.Zero(t, partial)
	assert.Equal(t, bytes.Count(data[:cut], []byte("\n")), n, "every whole line before the error is a row")
}

// TestQuoteEnd checks the eight-bytes-at-a-time scan against the plain
// definition: every byte value at every position of two words and a tail,
// beside every neighbour that could spill into it, with and without a
// quote after it, and random strings.
func TestQuoteEnd(t *testing.T) {
	naive := func(b []byte) (int, bool) {
		end := bytes.IndexByte(b, '"')
		if end < 0 {
			return -1, false
		}
		for _, c := range b[:end] {
			if c < 0x20 || c >= 0x80 || c == '\\' {
				return end, false
			}
		}
		return end, true
	}
	check := func(b []byte) {
		wantEnd, wantPlain := naive(b)
		end, plain := quoteEnd(b)
		require.Equal(t, wantEnd, end, "%q", b)
		if end >= 0 {
			require.Equal(t, wantPlain, plain, "%q", b)
		}
	}
	buf := make([]byte, 19)
	for c := range 256 {
		for _, next := range []byte{0x00, 0x1f, 0x20, 0x21, '"', 'a', 0x5c, 0x5d, 0x7f, 0x80} {
			for at := range len(buf) {
				for _, quoteAt := range []int{-1, 3, 8, 12, 18} {
					for i := range buf {
						buf[i] = 'a'
					}
					buf[at] = byte(c)
					if at+1 < len(buf) {
						buf[at+1] = next
					}
					if quoteAt >= 0 {
						buf[quoteAt] = '"'
					}
					check(buf)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for range 50000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(0x1c + rng.IntN(0x66))
		}
		check(b)
	}
}

// TestStrAgreesWithEncodingJSON: the rows reader's string scanner accepts
// a string exactly when encoding/json does, with the same value, but for
// surrogate escapes (which it leaves to encoding/json), and ends after its
// closing quote: strings built from escapes, quotes, control bytes and
// pieces of UTF-8 in every order. Its checker of strings nobody keeps
// (checkStr) accepts the same strings and ends at the same place.
func TestStrAgreesWithEncodingJSON(t *testing.T) {
	pieces := []string{`a`, `\n`, `\"`, `\\`, `\/`, `\u00e9`, `\u20AC`, `\ud800`, `\uDFFF`, `\u12`, `\x`, `\`,
		"\x01", "\x1f", "é", "\xc3", "\xa9", "\xe2\x82", "\xff", ` `, "\u2028"}
	surrogate := regexp.MustCompile(`\\u[dD][89a-fA-F]`)
	check := func(body string) {
		line := []byte(`"` + body + `","next"`)
		s := rowScan{d: newRowDecoder(), b: line}
		got, ok := s.str()
		c := rowScan{d: s.d, b: line}
		require.Equal(t, ok, c.checkStr(), "checkStr and str disagree on %q", line)
		if ok {
			require.Equal(t, s.i, c.i, "checkStr ends elsewhere than str in %q", line)
		}
		var want string
		dec := json.NewDecoder(bytes.NewReader(line))
		wantErr := dec.Decode(&want)
		if ok {
			require.NoError(t, wantErr, "accepted what encoding/json rejects: %q", line)
			require.Equal(t, want, string(got), "%q", line)
			require.Equal(t, int(dec.InputOffset()), s.i, "%q", line)
		} else if wantErr == nil && utf8.ValidString(body) { // encoding/json replaces invalid UTF-8
			require.Regexp(t, surrogate, body, "rejected what encoding/json accepts: %q", line)
		}
	}
	for _, a := range pieces {
		for _, b := range pieces {
			for _, c := range pieces {
				check(a + b + c)
			}
		}
	}
	rng := rand.New(rand.NewPCG(2, 3))
	for range 20000 {
		var body strings.Builder
		for range 1 + rng.IntN(12) {
			body.WriteString(pieces[rng.IntN(len(pieces))])
			if rng.IntN(3) == 0 {
				body.WriteString(strings.Repeat("x", rng.IntN(20)))
			}
		}
		check(body.String())
	}
}
