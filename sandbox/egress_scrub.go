package sandbox

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// scrubber removes an egress's secrets from what comes back to the sandbox:
// each real value becomes its placeholder, and each encoded form of it
// (URL, JSON, base64; see secretForms) becomes Redacted. Every response is
// scrubbed, whether or not its request carried a placeholder: an upstream
// that received the key once may hand it back to any later request.
type scrubber struct {
	forms   []string // longest first
	repl    *strings.Replacer
	wrapped []string // the base64 forms, also found broken across lines
	longest int      // of wrapped
}

func newScrubber(secrets []placeholder) *scrubber {
	with := map[string]string{}
	var wrapped []string
	for _, s := range secrets {
		for _, f := range base64Forms(s.Value) {
			if !slices.Contains(wrapped, f) {
				wrapped = append(wrapped, f)
			}
		}
		for i, f := range secretForms(s.Value) {
			if _, ok := with[f]; ok {
				continue
			}
			with[f] = Redacted
			if i == 0 {
				with[f] = s.token
			}
		}
	}
	if len(with) == 0 {
		return nil
	}
	sc := &scrubber{wrapped: wrapped}
	for _, f := range wrapped {
		sc.longest = max(sc.longest, len(f))
	}
	for f := range with {
		sc.forms = append(sc.forms, f)
	}
	slices.SortFunc(sc.forms, func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	for _, f := range sc.forms {
		pairs = append(pairs, f, with[f])
	}
	sc.repl = strings.NewReplacer(pairs...)
	return sc
}

// string scrubs a whole string.
func (sc *scrubber) string(s string) string { return sc.unwrapped(sc.repl.Replace(s)) }

// unwrapped redacts each base64 form of a secret that line breaks split
// (base64 wrapped at 76 columns in MIME, 64 in PEM, at any column by
// other encoders): it searches text with every single line end ("\n",
// "\r\n", "\r") left out and replaces each match, breaks and all, with
// Redacted. An empty line ends a block of base64, so it is not left out.
// Unbroken forms are the Replacer's.
func (sc *scrubber) unwrapped(text string) string {
	if len(sc.wrapped) == 0 || !joinsBase64(text) {
		return text
	}
	joined := make([]byte, 0, len(text))
	at := make([]int32, 0, len(text)) // at[j]: where joined[j] is in text
	for i := 0; i < len(text); {
		end := i
		for end < len(text) && (text[end] == '\r' || text[end] == '\n') {
			end++
		}
		if end == i {
			joined, at = append(joined, text[i]), append(at, int32(i))
			i++
			continue
		}
		if strings.Count(text[i:end], "\n") > 1 {
			joined, at = append(joined, '\n'), append(at, int32(i)) // a barrier
		}
		i = end
	}
	var spans [][2]int // in text
	for _, f := range sc.wrapped {
		for from := 0; ; {
			j := bytes.Index(joined[from:], []byte(f))
			if j < 0 {
				break
			}
			j += from
			spans = append(spans, [2]int{int(at[j]), int(at[j+len(f)-1]) + 1})
			from = j + len(f)
		}
	}
	if len(spans) == 0 {
		return text
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	var out strings.Builder
	done := 0
	for _, sp := range spans {
		if sp[1] <= done {
			continue
		}
		if sp[0] >= done {
			out.WriteString(text[done:sp[0]])
			out.WriteString(Redacted)
		}
		done = sp[1]
	}
	out.WriteString(text[done:])
	return out.String()
}

// header scrubs h's values in place, and drops every header whose name
// holds a secret in any form, compared without regard to case (names are
// case-insensitive, and net/http changes their case).
func (sc *scrubber) header(h http.Header) {
	for name, vals := range h {
		lower := strings.ToLower(name)
		for _, f := range sc.forms {
			if strings.Contains(lower, strings.ToLower(f)) {
				delete(h, name)
				break
			}
		}
		for i, v := range vals {
			vals[i] = sc.string(v)
		}
	}
}

// heldBack returns the length of the longest suffix of text that is a
// proper prefix of a form: what must wait for more input before it is known
// not to become a secret.
func (sc *scrubber) heldBack(text string) int {
	keep := 0
	for _, f := range sc.forms {
		for k := min(len(text), len(f)-1); k > keep; k-- {
			if strings.HasSuffix(text, f[:k]) {
				keep = k
				break
			}
		}
	}
	return max(keep, sc.heldBackWrapped(text))
}

// joinsBase64 reports whether text has a single line end with a base64
// character on either side: where a wrapped form could be split.
func joinsBase64(text string) bool {
	for i := 0; i < len(text); {
		j := strings.IndexAny(text[i:], "\r\n")
		if j < 0 {
			return false
		}
		i += j
		end := i
		for end < len(text) && (text[end] == '\r' || text[end] == '\n') {
			end++
		}
		if i > 0 && end < len(text) && strings.Count(text[i:end], "\n") <= 1 && isBase64Char(text[i-1]) && isBase64Char(text[end]) {
			return true
		}
		i = end
	}
	return false
}

// isBase64Char reports whether c is in either base64 alphabet, padding
// included.
func isBase64Char(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("+/-_=", c) >= 0
}

// heldBackWrapped is heldBack for the forms line breaks may split: the
// longest suffix of text that, its CRs and LFs left out, is a proper prefix
// of one of them. A suffix with no break in it is heldBack's already.
func (sc *scrubber) heldBackWrapped(text string) int {
	if len(sc.wrapped) == 0 || !strings.ContainsAny(text[max(0, len(text)-3*sc.longest):], "\r\n") {
		return 0
	}
	keep := 0
	var joined []byte // the suffix's bytes but breaks, reversed
	lineEnds := 0     // in the current run of breaks
	for i := len(text) - 1; i >= 0 && len(joined) < sc.longest-1; i-- {
		c := text[i]
		if c == '\r' || c == '\n' {
			if c == '\n' {
				lineEnds++
			}
			if lineEnds > 1 { // an empty line: no form goes on past it
				break
			}
			continue
		}
		lineEnds = 0
		joined = append(joined, c)
		for _, f := range sc.wrapped {
			if len(joined) < len(f) && reversedPrefix(f, joined) {
				keep = len(text) - i
				break
			}
		}
	}
	return keep
}

// reversedPrefix reports whether rev, read backwards, begins f.
func reversedPrefix(f string, rev []byte) bool {
	for j := range rev {
		if f[j] != rev[len(rev)-1-j] {
			return false
		}
	}
	return true
}

// reader scrubs src as a stream. It holds back only a tail that could still
// become a secret, so streamed events pass at once. atEOF, when set, runs
// once src ends, before the last bytes are returned (the trailers' scrub).
func (sc *scrubber) reader(src io.ReadCloser, atEOF func()) *scrubReader {
	return &scrubReader{sc: sc, src: src, atEOF: atEOF}
}

// scrubReader is a stream scrubbed by a scrubber. It passes writes to its
// source, when that can be written (an upgraded connection).
type scrubReader struct {
	sc      *scrubber
	src     io.ReadCloser
	atEOF   func()
	buf     []byte
	pending []byte // read from src, not yet scrubbed and returned
	out     []byte // scrubbed, ready to return
	eof     bool
}

func (s *scrubReader) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.eof {
			if len(s.pending) > 0 {
				s.out, s.pending = s.pending, nil
				break
			}
			return 0, io.EOF
		}
		if s.buf == nil {
			s.buf = make([]byte, 32*1024)
		}
		n, err := s.src.Read(s.buf)
		s.pending = append(s.pending, s.buf[:n]...)
		if err == io.EOF {
			s.eof = true
			if s.atEOF != nil {
				s.atEOF()
			}
		} else if err != nil {
			return 0, err
		}
		text := s.sc.string(string(s.pending))
		keep := 0
		if !s.eof {
			keep = s.sc.heldBack(text)
		}
		s.out = append(s.out, text[:len(text)-keep]...)
		s.pending = append(s.pending[:0], text[len(text)-keep:]...)
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

func (s *scrubReader) Write(p []byte) (int, error) {
	if w, ok := s.src.(io.Writer); ok {
		return w.Write(p)
	}
	return 0, errors.New("egress: not writable")
}

func (s *scrubReader) Close() error { return s.src.Close() }

// scrubResponse scrubs resp for the egress's secrets: headers (names too),
// the body as it streams, trailers once the body ends and, after a 101,
// the upgraded stream from the upstream. A body the upstream compressed
// (asked or not) is decompressed first; one in an encoding the proxy
// cannot read is an error (the proxy answers 502): it could hide the key.
func (e *Egress) scrubResponse(resp *http.Response) error {
	sc := e.scrub
	if sc == nil {
		return nil
	}
	sc.header(resp.Header)
	if resp.StatusCode == http.StatusSwitchingProtocols {
		if len(resp.Header.Values("Sec-WebSocket-Extensions")) > 0 {
			return errors.New("egress: the upstream switched protocols with extensions the proxy never offered (a compressed stream could hide a secret)")
		}
		resp.Body = sc.reader(resp.Body, nil) // still an io.ReadWriteCloser, as the proxy needs
		return nil
	}
	body, err := decoded(resp)
	if err != nil {
		return err
	}
	resp.Body = sc.reader(body, func() { sc.header(resp.Trailer) })
	if resp.ContentLength >= 0 {
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	}
	return nil
}

// decoded returns resp's body with its Content-Encoding undone (and the
// header removed), or an error for an encoding the proxy cannot read. The
// encoding is every Content-Encoding line together, as clients read it
// ("identity" on one line and "gzip" on the next is gzip to curl and to
// browsers), and at most one coding besides "identity" is undone; a chain
// of them is refused.
func decoded(resp *http.Response) (io.ReadCloser, error) {
	var codings []string
	for _, v := range resp.Header.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.ToLower(strings.TrimSpace(c)); c != "" && c != "identity" {
				codings = append(codings, c)
			}
		}
	}
	enc := strings.Join(codings, ", ")
	switch enc {
	case "":
		resp.Header.Del("Content-Encoding")
		return resp.Body, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("egress: the upstream's gzip body: %w", err)
		}
		resp.Header.Del("Content-Encoding")
		return readCloser{zr, resp.Body}, nil
	case "deflate": // zlib, as the standard says, or raw deflate, as some servers send
		br := bufio.NewReader(resp.Body)
		head, _ := br.Peek(2)
		var r io.Reader
		if len(head) == 2 && head[0]&0x0f == 8 && (uint16(head[0])<<8|uint16(head[1]))%31 == 0 {
			zr, err := zlib.NewReader(br)
			if err != nil {
				return nil, fmt.Errorf("egress: the upstream's deflate body: %w", err)
			}
			r = zr
		} else {
			r = flate.NewReader(br)
		}
		resp.Header.Del("Content-Encoding")
		return readCloser{r, resp.Body}, nil
	}
	return nil, fmt.Errorf("egress: the upstream answered with Content-Encoding %q, which the proxy cannot search for secrets", enc)
}

// readCloser reads from r and closes c.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

// noInterim passes a response on but for its informational (1xx) headers:
// the proxy does not forward 100 Continue, 103 Early Hints and the like
// (the sandbox's own server answers Continue; hints are only hints), so no
// header reaches the sandbox unscrubbed. 101 is not interim.
type noInterim struct{ http.ResponseWriter }

func (w noInterim) WriteHeader(code int) {
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w noInterim) Unwrap() http.ResponseWriter { return w.ResponseWriter }
