package sandbox

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyEncoding is one way an upstream holding the key may hand it back,
// and the way the agent undoes it.
type keyEncoding struct {
	encode func(key string) string
	decode func(body string) string
}

// wholeKeyEncodings are the encodings that transform every byte of the
// key (not only the characters some escaping rule names), as an upstream
// that stored the key may write them: in a debug dump (hex), a Windows
// service's or a JavaScript string's UTF-16, an HTML page's numeric
// character references, a URL encoder that escapes every byte, a MIME
// body or a PEM-like block of base64 wrapped across lines.
var wholeKeyEncodings = map[string]keyEncoding{
	"hex, lower case":                        {encode: func(k string) string { return hex.EncodeToString([]byte(k)) }, decode: decodeHexRuns},
	"hex, upper case":                        {encode: func(k string) string { return strings.ToUpper(hex.EncodeToString([]byte(k))) }, decode: decodeHexRuns},
	"UTF-16LE with a byte-order mark":        {encode: func(k string) string { return "\xff\xfe" + utf16Bytes(k, binary.LittleEndian) }, decode: decodeUTF16},
	"UTF-16BE":                               {encode: func(k string) string { return utf16Bytes(k, binary.BigEndian) }, decode: decodeUTF16},
	"HTML decimal references":                {encode: func(k string) string { return charRefs(k, "&#%d;") }, decode: html.UnescapeString},
	"HTML hex references":                    {encode: func(k string) string { return charRefs(k, "&#x%x;") }, decode: html.UnescapeString},
	"HTML hex references, upper case":        {encode: func(k string) string { return charRefs(k, "&#X%X;") }, decode: html.UnescapeString},
	"every byte percent-encoded":             {encode: func(k string) string { return charRefs(k, "%%%02X") }, decode: unescapeURL},
	"every byte percent-encoded, lower case": {encode: func(k string) string { return charRefs(k, "%%%02x") }, decode: unescapeURL},
	"base64 wrapped at 76 with CRLF (MIME)":  {encode: func(k string) string { return wrappedBase64Blocks(k, 76, "\r\n") }, decode: decodeBase64Blocks},
	"base64 wrapped at 64 with LF (PEM)":     {encode: func(k string) string { return wrappedBase64Blocks(k, 64, "\n") }, decode: decodeBase64Blocks},
	"base64 wrapped at 16 with LF":           {encode: func(k string) string { return wrappedBase64Blocks(k, 16, "\n") }, decode: decodeBase64Blocks},
}

// TestEscapeProxyKeyInWholeEncodings: the agent has the model's host store
// the key (its placeholder, swapped by the proxy) and hand it back in each
// of wholeKeyEncodings, amid other text, then undoes the encoding. On
// a4d171d each gave the agent the key.
func TestEscapeProxyKeyInWholeEncodings(t *testing.T) {
	requireBwrapNet(t)
	eachLauncher(t, func(t *testing.T) {
		upCA, roots := newTestAuthority(t)
		var mu sync.Mutex
		var stored string
		model := newTestUpstream(t, upCA, func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			if r.URL.Path == "/store" {
				stored = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				fmt.Fprint(w, "stored")
				return
			}
			enc, ok := wholeKeyEncodings[r.URL.Query().Get("as")]
			if !ok {
				http.NotFound(w, r)
				return
			}
			fmt.Fprintf(w, "<p>invalid key: %s (end)</p>", enc.encode(stored))
		})
		e := startEgress(t, EgressConfig{
			Allow:              []AllowRule{{Host: "model.test", Ports: []int{model.port}}},
			Secrets:            []Secret{{Name: "MODEL_API_KEY", Value: slashedKey, Hosts: []string{"model.test"}}},
			AllowLoopbackHosts: []string{"model.test"},
			Resolver:           mapResolver{"model.test": loopback4},
			UpstreamRoots:      roots,
		})
		sb := newNetSandbox(t, e, nil, "")
		m := "https://model.test:" + strconv.Itoa(model.port)
		r := sb.run(t, `curl -sS -H "Authorization: Bearer $MODEL_API_KEY" `+m+`/store`)
		require.Equal(t, "stored", r.stdout, "control: the key is stored upstream: %s", r)

		for name, enc := range wholeKeyEncodings {
			// base64 on the way out: UTF-16 holds NULs.
			r := sb.run(t, `curl -sS `+m+`/?as=`+url.QueryEscape(name)+` | base64 -w0`)
			require.Equal(t, 0, r.code, "%s: %s", name, r)
			body, err := base64.StdEncoding.DecodeString(r.stdout)
			require.NoError(t, err, name)
			require.Contains(t, string(body), "invalid key: ", "control: the upstream answered %s", name)
			assert.NotContains(t, enc.decode(string(body)), slashedKey, "the key reached the sandbox as %s", name)
			assert.NotContains(t, string(body), slashedKey, name)
		}
	})
}

// TestWholeKeyEncodingsDecode: each decoder finds the key its encoder
// hid, so that the test above fails where the key gets through.
func TestWholeKeyEncodingsDecode(t *testing.T) {
	for name, enc := range wholeKeyEncodings {
		assert.Contains(t, enc.decode("<p>invalid key: "+enc.encode(slashedKey)+" (end)</p>"), slashedKey, name)
		assert.NotContains(t, enc.decode("<p>invalid key: "+Redacted+" (end)</p>"), slashedKey, name)
	}
}

func utf16Bytes(s string, order binary.AppendByteOrder) string {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = order.AppendUint16(b, u)
	}
	return string(b)
}

// decodeUTF16 reads body as UTF-16 in either byte order, at either
// alignment, and returns every reading, one per line.
func decodeUTF16(body string) string {
	var out []string
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		for start := range 2 {
			var units []uint16
			for i := start; i+1 < len(body); i += 2 {
				units = append(units, order.Uint16([]byte(body[i:i+2])))
			}
			out = append(out, string(utf16.Decode(units)))
		}
	}
	return strings.Join(out, "\n")
}

// charRefs writes each byte of s with format.
func charRefs(s, format string) string {
	var b strings.Builder
	for i := range len(s) {
		fmt.Fprintf(&b, format, s[i])
	}
	return b.String()
}

// decodeHexRuns decodes every run of hex digits in body, at both
// alignments.
func decodeHexRuns(body string) string {
	var out []string
	for _, run := range strings.FieldsFunc(body, func(c rune) bool { return !strings.ContainsRune("0123456789abcdefABCDEF", c) }) {
		for start := range 2 {
			if b, err := hex.DecodeString(run[start : start+(len(run)-start)/2*2]); err == nil {
				out = append(out, string(b))
			}
		}
	}
	return strings.Join(out, "\n")
}

func unescapeURL(body string) string {
	s, _ := url.PathUnescape(body)
	return s
}

// wrappedBase64Blocks encodes the key inside longer data at every offset
// from 0 to width, so that the line breaks fall at every place within its
// encoding, each block wrapped at width with eol and the blocks apart by
// an empty line.
func wrappedBase64Blocks(key string, width int, eol string) string {
	var blocks []string
	for pad := range width + 3 {
		data := strings.Repeat("x", pad) + key + " trailing data"
		enc := base64.StdEncoding.EncodeToString([]byte(data))
		var lines []string
		for len(enc) > width {
			lines, enc = append(lines, enc[:width]), enc[width:]
		}
		blocks = append(blocks, strings.Join(append(lines, enc), eol))
	}
	return eol + strings.Join(blocks, eol+eol) + eol
}

// decodeBase64Blocks decodes each block of base64 lines in body (blocks
// apart by an empty line), as a MIME or PEM reader would.
func decodeBase64Blocks(body string) string {
	var out []string
	body = strings.ReplaceAll(body, "\r\n", "\n")
	for _, block := range strings.Split(body, "\n\n") {
		var b64 strings.Builder
		for _, line := range strings.Split(block, "\n") {
			if !strings.ContainsAny(line, "<> ") {
				b64.WriteString(line)
			}
		}
		if b, err := base64.StdEncoding.DecodeString(b64.String()); err == nil {
			out = append(out, string(b))
		}
	}
	return strings.Join(out, "\n")
}
