package rundir

import (
	"bytes"
	"encoding/json"

	"github.com/pairbench/pairbench"
)

// PlannedPairList is an intent's planned pairs in run.json. A plan of
// 1,000 intents of 500 pairs lists 500,000 of them (34 MB of JSON), which
// encoding/json took 0.6 s of CPU to read, a tenth of the report's time;
// UnmarshalJSON reads the list as the plan writes it on its own, a few
// times faster, and hands anything else to encoding/json, so the result is
// the same for every input.
type PlannedPairList []PlannedPair

// UnmarshalJSON reads data, a JSON array of pairs: each an object of
// "pair", an integer, and "order", a string of printable ASCII without
// escapes, as the plan writes them. Any other key, spelling or value, and
// null, go to encoding/json.
func (l *PlannedPairList) UnmarshalJSON(data []byte) error {
	if pairs, ok := scanPlannedPairs(data); ok {
		*l = pairs
		return nil
	}
	return json.Unmarshal(data, (*[]PlannedPair)(l))
}

// scanPlannedPairs reads data as UnmarshalJSON says, and reports false for
// anything else. data is valid JSON (encoding/json checked it before
// calling UnmarshalJSON).
func scanPlannedPairs(data []byte) ([]PlannedPair, bool) {
	s := pairScan{data: data}
	if !s.byte('[') {
		return nil, false
	}
	// Each pair opens one object: room for all of them up front.
	pairs := make([]PlannedPair, 0, bytes.Count(data, []byte{'{'}))
	if s.byte(']') {
		return pairs, s.end()
	}
	for {
		p, ok := s.pair()
		if !ok {
			return nil, false
		}
		pairs = append(pairs, p)
		if s.byte(']') {
			return pairs, s.end()
		}
		if !s.byte(',') {
			return nil, false
		}
	}
}

// pairScan reads a list of planned pairs from data at i.
type pairScan struct {
	data []byte
	i    int
}

func (s *pairScan) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte takes c, after any white space, and reports whether it was there.
func (s *pairScan) byte(c byte) bool {
	s.space()
	if s.i < len(s.data) && s.data[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether nothing but white space is left.
func (s *pairScan) end() bool {
	s.space()
	return s.i == len(s.data)
}

// pair reads one {"pair": N, "order": "..."} object, the keys in any order.
func (s *pairScan) pair() (PlannedPair, bool) {
	var p PlannedPair
	if !s.byte('{') {
		return p, false
	}
	if s.byte('}') {
		return p, true
	}
	for {
		key, ok := s.plainString()
		if !ok || !s.byte(':') {
			return p, false
		}
		switch string(key) {
		case "pair":
			if p.Pair, ok = s.integer(); !ok {
				return p, false
			}
		case "order":
			v, ok := s.plainString()
			if !ok {
				return p, false
			}
			p.Order = order(v)
		default:
			return p, false
		}
		if s.byte('}') {
			return p, true
		}
		if !s.byte(',') {
			return p, false
		}
	}
}

// order is v as an order, the two there are without a new string.
func order(v []byte) pairbench.Order {
	switch string(v) {
	case string(pairbench.AB):
		return pairbench.AB
	case string(pairbench.BA):
		return pairbench.BA
	}
	return pairbench.Order(v)
}

// plainString reads a string of printable ASCII with no escape and returns
// its bytes.
func (s *pairScan) plainString() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.data); s.i++ {
		switch c := s.data[s.i]; {
		case c == '"':
			s.i++
			return s.data[start : s.i-1], true
		case c == '\\' || c < 0x20 || c > 0x7e:
			return nil, false
		}
	}
	return nil, false
}

// integer reads an integer of at most 18 digits (no fraction, no
// exponent), which fits an int.
func (s *pairScan) integer() (int, bool) {
	s.space()
	neg := s.i < len(s.data) && s.data[s.i] == '-'
	if neg {
		s.i++
	}
	n, digits := 0, 0
	for ; s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9'; s.i++ {
		n = n*10 + int(s.data[s.i]-'0')
		digits++
	}
	if digits == 0 || digits > 18 {
		return 0, false
	}
	if s.i < len(s.data) && (s.data[s.i] == '.' || s.data[s.i] == 'e' || s.data[s.i] == 'E') {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}
