package intents

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// decodeDomain reads a domain.json strictly: one object, known fields only,
// no duplicates. It returns the domain and the line of each field's key,
// computed from the decoder's offsets.
func decodeDomain(file string, data []byte, ps *Problems) (*Domain, map[string]int) {
	d := &Domain{Pos: Pos{File: file, Line: 1}}
	lines := map[string]int{}
	lineAt := func(off int64) int {
		off = min(max(off, 0), int64(len(data)))
		return 1 + bytes.Count(data[:off], []byte("\n"))
	}
	fail := func(err error, dec *json.Decoder) {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			ps.Add(Pos{File: file, Line: lineAt(se.Offset)}, "JSON: %v", se)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			ps.Add(Pos{File: file, Line: lineAt(int64(len(data)))}, "JSON: unexpected end of file")
		default:
			ps.Add(Pos{File: file, Line: lineAt(dec.InputOffset())}, "JSON: %v", err)
		}
	}

	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		fail(err, dec)
		return d, lines
	}
	if tok != json.Delim('{') {
		ps.Add(Pos{File: file, Line: lineAt(dec.InputOffset())}, "domain.json must hold one JSON object")
		return d, lines
	}
	d.Line = lineAt(dec.InputOffset())
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			fail(err, dec)
			return d, lines
		}
		key, _ := tok.(string)
		at := Pos{File: file, Line: lineAt(dec.InputOffset())}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			fail(err, dec)
			return d, lines
		}
		if _, dup := lines[key]; dup {
			ps.Add(at, "duplicate field %q", key)
			continue
		}
		lines[key] = at.Line
		strs := func(dst *[]string) {
			if json.Unmarshal(raw, dst) != nil {
				ps.Add(at, "%s: want a list of strings", key)
			}
		}
		str := func(dst *string) {
			if json.Unmarshal(raw, dst) != nil {
				ps.Add(at, "%s: want a string", key)
			}
		}
		switch key {
		case "start_urls":
			strs(&d.StartURLs)
		case "exclude":
			strs(&d.Exclude)
		case "needs_sign_in":
			strs(&d.NeedsSignIn)
		case "profile":
			str(&d.Profile)
		case "signed_in_check":
			str(&d.SignedInCheck)
		case "cart_step":
			str(&d.CartStep)
		case "context":
			str(&d.Context)
		default:
			ps.Add(at, "unknown field %q", key)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		fail(err, dec)
		return d, lines
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		ps.Add(Pos{File: file, Line: lineAt(dec.InputOffset())}, "data after the JSON object")
	}
	return d, lines
}
