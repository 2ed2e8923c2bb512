package local

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseCommand reads a command the way Chromium would, or refuses it, and
// its re-encoding is what Chromium gets.
func TestParseCommandReadsWhatChromiumWouldOrRefuses(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"id":1,"method":"Page.enable"}`, `{"id":1,"method":"Page.enable"}`},
		{`{"id":2,"method":"Browser.setDownload\u0042ehavior","params":{"behavior":"allow"}}`,
			`{"id":2,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow"}}`},
		{`{"sessionId":"S","params":null,"id":3,"method":"Runtime.evaluate","extra":[1]}`,
			`{"id":3,"method":"Runtime.evaluate","sessionId":"S"}`},
		{`{"id":4,"method":"Runtime.evaluate","params":{"expression":"1<2 && \"\u2028\"","n":12345678901234567890}}`,
			`{"id":4,"method":"Runtime.evaluate","params":{"expression":"1<2 && \"\u2028\"","n":12345678901234567890}}`},
	} {
		cmd, err := parseCommand([]byte(c.in))
		require.NoError(t, err, c.in)
		out, err := encodeJSON(cmd)
		require.NoError(t, err)
		assert.Equal(t, c.want, string(out), c.in)
	}
	for _, in := range []string{
		`{"id":1,"method":"Page.enable","method":"Browser.setDownloadBehavior"}`,
		`{"id":1,"id":2,"method":"Page.enable"}`,
		`[{"id":1,"method":"Page.enable"}]`,
		`{"id":1,"method":"Page.enable"}{"id":2,"method":"Browser.setDownloadBehavior"}`,
		`{"id":1.5,"method":"Page.enable"}`,
		`{"id":"1","method":"Page.enable"}`,
		`{"id":1,"method":["Page.enable"]}`,
		`{"id":1,"method":"Page.enable","params":[]}`,
		`{"method":"Page.enable"}`,
		`{"id":1}`,
		`{"id":1,"method":"Page.enable" /* comment */}`,
		`{"id":1,"method":"Page.enable",}`,
	} {
		_, err := parseCommand([]byte(in))
		assert.Error(t, err, in)
	}
}

func TestDenyDownloadsKeepsContextAndEvents(t *testing.T) {
	got := denyDownloads([]byte(`{"behavior":"allowAndName","downloadPath":"/tmp/x","browserContextId":"C","eventsEnabled":true}`))
	assert.JSONEq(t, `{"behavior":"deny","browserContextId":"C","eventsEnabled":true}`, string(got))
	assert.JSONEq(t, `{"behavior":"deny"}`, string(denyDownloads(nil)))
}
