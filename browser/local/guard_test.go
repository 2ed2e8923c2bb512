package local

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseCommand reads a command the way Chromium would, or refuses it, and
// what it forwards (wire) is what Chromium gets.
func TestParseCommandReadsWhatChromiumWouldOrRefuses(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"id":1,"method":"Page.enable"}`, `{"id":1,"method":"Page.enable"}`},
		{`{"id":2,"method":"Browser.setDownload\u0042ehavior","params":{"behavior":"allow"}}`,
			`{"id":2,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow"}}`},
		{`{"sessionId":"S","params":null,"id":3,"method":"Runtime.evaluate","extra":[1]}`,
			`{"id":3,"method":"Runtime.evaluate","sessionId":"S"}`},
		{`{"id":4,"method":"Runtime.evaluate","params":{"expression":"1<2 && \"\u2028\"","n":12345678901234567890}}`,
			`{"id":4,"method":"Runtime.evaluate","params":{"expression":"1<2 && \"\u2028\"","n":12345678901234567890}}`},
		// White space, strings holding braces and quotes, keys in escapes:
		// the params go on as they were sent.
		{" {\"id\" :5 ,\r\n \"params\" : { \"s\":\"}\\\"{\" , \"a\":[{\"b\":\"]\"},-1e3,true] } ,\"m\\u0065thod\" :\"X\", \"x\":{\"method\":\"Y\"}}\t",
			`{"id":5,"method":"X","params":{ "s":"}\"{" , "a":[{"b":"]"},-1e3,true] }}`},
	} {
		cmd, err := parseCommand([]byte(c.in))
		require.NoError(t, err, c.in)
		parts, err := cmd.wire()
		require.NoError(t, err)
		assert.Equal(t, c.want, string(bytes.Join(parts, nil)), c.in)
	}
	for _, in := range []string{
		`{"id":1,"method":"Page.enable","method":"Browser.setDownloadBehavior"}`,
		`{"id":1,"id":2,"method":"Page.enable"}`,
		`{"id":1,"method":"Page.enable","meth\u006fd":"Browser.setDownloadBehavior"}`,
		`{"id":1,"method":"Page.enable","params":"{}"}`,
		`{"id":1,"method":"Page.enable","params":{"a":1}`,
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
	var p map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(`{"behavior":"allowAndName","downloadPath":"/tmp/x","browserContextId":"C","eventsEnabled":true}`), &p))
	got, err := encodeJSON(denyDownloads(p))
	require.NoError(t, err)
	assert.JSONEq(t, `{"behavior":"deny","browserContextId":"C","eventsEnabled":true}`, string(got))
	got, err = encodeJSON(denyDownloads(nil))
	require.NoError(t, err)
	assert.JSONEq(t, `{"behavior":"deny"}`, string(got))
}

// TestGuardHoldsABigCommandOnce: a command near the size limit
// costs the guard far less than its own size again, and reaches the browser
// as it was sent. A hostile agent's eight connections, each sending one
// 64 MiB command, must not make the launcher hold gigabytes: decoding the
// params into Go values cost 40 to 64 times the message (2.7 GB at its
// peak for one 64 MiB array of zeros, and 50 s of CPU).
func TestGuardHoldsABigCommandOnce(t *testing.T) {
	g := &devToolsGuard{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, fill := range []string{"0,", "{},", `"",`} {
		var b bytes.Buffer
		b.WriteString(`{"id":1,"method":"Runtime.evaluate","params":{"expression":"1","a":[`)
		for b.Len() < 16<<20 {
			b.WriteString(fill)
		}
		b.WriteString(`0]}}`)
		msg := b.Bytes()
		var up bytes.Buffer
		up.Grow(len(msg) + 64)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := g.command(msg, &frameWriter{w: &up, mask: true}, &frameWriter{w: io.Discard})
		runtime.ReadMemStats(&after)
		require.NoError(t, err, fill)
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%q: a %d-byte command cost %d bytes", fill, len(msg), allocated)
		assert.Less(t, allocated, uint64(len(msg)/4), "%q: the guard allocated %d bytes for a %d-byte command", fill, allocated, len(msg))
		// One masked frame with a 64-bit length and a zero key, then the
		// command as it was sent.
		require.Greater(t, up.Len(), 14)
		assert.True(t, bytes.Equal(msg, up.Bytes()[14:]), "%q: the command reached the browser changed", fill)
	}
}

// FuzzParseCommandAgreesWithEncodingJSON: what parseCommand reads of a
// message is what encoding/json reads of it (its top-level keys, each
// named once), and what it forwards is one JSON object with the same id,
// method, sessionId and params.
func FuzzParseCommandAgreesWithEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"method":"Page.enable"}`,
		`{"id":2,"method":"Browser.setDownload\u0042ehavior","params":{"behavior":"allow"}}`,
		`{"sessionId":"S","params":null,"id":3,"method":"Runtime.evaluate","extra":[1,{"method":"x"}]}`,
		` {"id" :5 , "params" : { "s":"}\"{\\" , "a":[{"b":"]"},-1e3,true] } ,"m\u0065thod" :"X"}`,
		`{"id":1,"method":"Page.enable","meth\u006fd":"Browser.setDownloadBehavior"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		cmd, err := parseCommand(msg)
		if err != nil {
			return
		}
		var top map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(msg, &top), "encoding/json refuses what the guard read")
		var method, session string
		require.NoError(t, json.Unmarshal(top["method"], &method))
		if s, ok := top["sessionId"]; ok {
			require.NoError(t, json.Unmarshal(s, &session))
		}
		assert.Equal(t, method, cmd.Method)
		assert.Equal(t, session, cmd.SessionID)
		assert.Equal(t, strings.TrimSpace(string(top["id"])), strconv.FormatInt(cmd.ID, 10))

		parts, err := cmd.wire()
		require.NoError(t, err)
		var out map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(bytes.Join(parts, nil), &out), "the guard forwards what is not JSON")
		if p := top["params"]; len(p) > 0 && string(p) != "null" {
			assert.Equal(t, string(p), string(out["params"]))
		} else {
			assert.NotContains(t, out, "params")
		}
	})
}
