package bot

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// postedTransport is the one redaction of what the bot posts: every string
// in the JSON body of a write (comments, replies, check runs' titles,
// summaries and text, commit statuses, labels, on either backend and from
// `pairbench post`) has its credentials removed (RedactSecrets) before it
// leaves, whatever code wrote it: a report's registry source quoting a
// --git-url with a token, a failure reason quoting git.
type postedTransport struct{ next http.RoundTripper }

func (t postedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody || r.Method == http.MethodGet || r.Method == http.MethodHead {
		return t.next.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	if redacted, ok := redactJSON(body); ok {
		body = redacted
	}
	out := r.Clone(r.Context())
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.next.RoundTrip(out)
}

// redactJSON returns body with RedactSecrets applied to every string in
// it, and whether any changed; a body that is not JSON is left alone.
func redactJSON(body []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	changed := false
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if r := RedactSecrets(x); r != x {
				changed = true
				return r
			}
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	v = walk(v)
	if !changed {
		return nil, false
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return nil, false
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), true
}
