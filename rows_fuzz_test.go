package pairbench_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

// fuzzSeedRow is a row with every field set, so the seed corpus exercises
// every part of the schema.
func fuzzSeedRow() pairbench.Row {
	return pairbench.Row{
		V: pairbench.RowVersion, RunID: "run-1", Intent: "books-cheapest", Domain: "books.example",
		Stage: pairbench.StagePair, Pair: 3, Order: pairbench.BA, Arm: pairbench.Treatment, Attempt: 2,
		TrialDir: "trials/books-cheapest/3-treatment-2",
		Outcome:  pairbench.Wrong, Reason: `rule "price" failed`,
		Answer: pairbench.Answer{
			Raw:       "```json\n{\"price\": \"$12.50\", \"tags\": [\"a\", \"<b>\"]}\n```",
			Extracted: map[string]any{"price": "$12.50", "tags": []any{"a", "<b>"}, "n": 1.5},
		},
		WallSeconds: 41.25, StartDelayMS: 10012, Turns: 7, InputTokens: 12000, OutputTokens: 800,
		CostUSD: 0.0123, CapsHit: []pairbench.Cap{pairbench.CapTurns},
		ToolsDeclared: []string{"mcp__browser__browser_click", "mcp__pairbench__webmcp"},
		WebMCP: []pairbench.Invocation{
			{Tool: "find_books", Status: "ok", MS: 120, Registered: true},
			{Tool: "search", Status: "error", Error: "boom \u2028 <script>", MS: 3},
		},
		NativeTools:     []string{"search"},
		Adopted:         true,
		BrowserRefusals: 2,
		WebMCPImpl:      pairbench.WebMCPNative,
		Error:           "exit status 1",
		StartedAt:       "2026-11-29T21:00:00Z",
	}
}

// FuzzReadRows feeds arbitrary bytes to ReadRows. It must never panic, must
// keep the partial-line and line-number contracts, and every row it returns
// must survive AppendRow then ParseRow unchanged.
func FuzzReadRows(f *testing.F) {
	line, err := pairbench.AppendRow(nil, fuzzSeedRow())
	require.NoError(f, err)
	minimal := []byte(`{"v":1,"intent":"i","arm":"control","outcome":"correct","stage":"pair","order":"AB","attempt":1}` + "\n")

	f.Add(line)
	f.Add(append(append([]byte{}, line...), line...))
	f.Add(append(append([]byte{}, line...), line[:len(line)/2]...)) // partial last line
	f.Add(append(append([]byte{}, minimal...), "\n\n"...))
	f.Add(minimal[:len(minimal)-1])                                            // valid last line without its newline
	f.Add([]byte(`{"v":2,"intent":"i"}` + "\n"))                               // unsupported version
	f.Add([]byte(`{"v":1}{"v":1}` + "\n"))                                     // trailing data
	f.Add([]byte(`{"v":1,"intent":"i","arm":"x"}` + "\r\n"))                   // bad arm, CRLF
	f.Add([]byte(`{"v":1,"intent":"\xff","arm":"control","outcome":"wrong"}`)) // invalid UTF-8
	f.Add([]byte("\n  \n\t"))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		rows, partial, err := pairbench.ReadRows(bytes.NewReader(data))
		lines := bytes.Count(data, []byte("\n")) + 1

		if err != nil {
			var rowErr *pairbench.RowError
			require.ErrorAs(t, err, &rowErr, "ReadRows on a byte slice can only fail on a bad row")
			assert.Equal(t, 0, partial, "a failed read reports no partial line")
			assert.GreaterOrEqual(t, rowErr.Line, 1)
			assert.LessOrEqual(t, rowErr.Line, lines)
		}
		if partial != 0 {
			assert.Equal(t, lines, partial, "only the last line can be partial")
			assert.False(t, bytes.HasSuffix(data, []byte("\n")), "a line ending in a newline is complete")
		}

		for _, row := range rows {
			require.NoError(t, row.Validate(), "ReadRows returned an invalid row")
			assertRoundTrip(t, row)
		}
	})
}

// assertRoundTrip checks that row encodes to one line that decodes to the
// same row, and that encoding is then a fixed point.
func assertRoundTrip(t *testing.T, row pairbench.Row) {
	t.Helper()
	enc, err := pairbench.AppendRow(nil, row)
	require.NoError(t, err, "AppendRow of a parsed row")
	require.Equal(t, 1, bytes.Count(enc, []byte("\n")), "AppendRow writes exactly one line")
	require.True(t, bytes.HasSuffix(enc, []byte("\n")))

	back, err := pairbench.ParseRow(enc)
	require.NoError(t, err, "ParseRow(AppendRow(row))")
	assert.Equal(t, normalized(row), normalized(back), "row changed in a round trip")

	again, err := pairbench.AppendRow(nil, back)
	require.NoError(t, err)
	assert.Equal(t, string(enc), string(again), "encoding is not stable")
}

// normalized maps the empty collections that omitempty drops to nil, the one
// difference a round trip may make.
func normalized(r pairbench.Row) pairbench.Row {
	if len(r.CapsHit) == 0 {
		r.CapsHit = nil
	}
	if len(r.ToolsDeclared) == 0 {
		r.ToolsDeclared = nil
	}
	if len(r.WebMCP) == 0 {
		r.WebMCP = nil
	}
	if len(r.NativeTools) == 0 {
		r.NativeTools = nil
	}
	if len(r.Answer.Extracted) == 0 {
		r.Answer.Extracted = nil
	}
	return r
}

func TestRowRoundTripSeed(t *testing.T) {
	row := fuzzSeedRow()
	assertRoundTrip(t, row)

	enc, err := pairbench.AppendRow(nil, row)
	require.NoError(t, err)
	rows, partial, err := pairbench.ReadRows(bytes.NewReader(append(enc, enc[:10]...)))
	require.NoError(t, err)
	assert.Equal(t, 2, partial, "the cut second line is partial")
	require.Len(t, rows, 1)
	assert.Equal(t, row, rows[0])

	_, _, err = pairbench.ReadRows(bytes.NewReader(append(enc[:10:10], '\n')))
	var rowErr *pairbench.RowError
	require.True(t, errors.As(err, &rowErr), "a cut line that ends in a newline is an error, got %v", err)
	assert.Equal(t, 1, rowErr.Line)
}

// TestRowWebMCPImpl: webmcp_impl is additive. A row from before it (the
// committed demo's) still parses, with the field empty; each known value
// survives a round trip; an unknown value is refused by name.
func TestRowWebMCPImpl(t *testing.T) {
	old := []byte(`{"v":1,"intent":"i","arm":"control","outcome":"correct","stage":"pair","order":"AB","attempt":1}`)
	row, err := pairbench.ParseRow(old)
	require.NoError(t, err, "a row without webmcp_impl")
	assert.Equal(t, pairbench.WebMCPImpl(""), row.WebMCPImpl)
	enc, err := pairbench.AppendRow(nil, row)
	require.NoError(t, err)
	assert.NotContains(t, string(enc), "webmcp_impl", "an unrecorded implementation is omitted, as old rows have it")

	for _, impl := range []pairbench.WebMCPImpl{pairbench.WebMCPNative, pairbench.WebMCPPolyfill} {
		row.WebMCPImpl = impl
		assertRoundTrip(t, row)
		enc, err := pairbench.AppendRow(nil, row)
		require.NoError(t, err)
		assert.Contains(t, string(enc), `"webmcp_impl":"`+string(impl)+`"`)
	}

	_, err = pairbench.ParseRow([]byte(`{"v":1,"intent":"i","arm":"control","outcome":"correct","stage":"pair","order":"AB","attempt":1,"webmcp_impl":"remote"}`))
	assert.EqualError(t, err, `unknown webmcp_impl "remote"`)
}

// TestRowWebMCPEnv: webmcp_env is additive, survives a round trip, and is
// omitted when not recorded.
func TestRowWebMCPEnv(t *testing.T) {
	row, err := pairbench.ParseRow([]byte(`{"v":1,"intent":"i","arm":"control","outcome":"correct","stage":"pair","order":"AB","attempt":1}`))
	require.NoError(t, err)
	assert.Nil(t, row.WebMCPEnv)
	enc, err := pairbench.AppendRow(nil, row)
	require.NoError(t, err)
	assert.NotContains(t, string(enc), "webmcp_env")

	row.WebMCPEnv = &pairbench.WebMCPEnv{Browser: "Chrome/156.0.8078.114", Switches: []string{"--enable-blink-features=WebMCP"},
		DevTools: true, FrameTools: map[string][]string{"F1": {"find_books", "shop_hours"}},
		Mode: pairbench.WebMCPNative, PageNative: true, OriginTrials: []pairbench.OriginTrial{{Name: "WebMCP", Status: "ValidTokenNotProvided"}}}
	assertRoundTrip(t, row)
}

func TestWebMCPEnvDiffers(t *testing.T) {
	base := pairbench.WebMCPEnv{Browser: "Chrome/156.0.8078.114", Switches: []string{"--enable-blink-features=WebMCP"}, DevTools: true}
	same := base
	same.FrameTools = map[string][]string{"F1": {"find_books"}}
	assert.False(t, base.Differs(&same), "tools are not compared: treatment registers some")
	assert.False(t, base.Differs(nil), "an unrecorded environment differs from nothing")

	for name, other := range map[string]pairbench.WebMCPEnv{
		"version":  {Browser: "Chrome/157.0.1.1", Switches: base.Switches, DevTools: true},
		"switches": {Browser: base.Browser, DevTools: true},
		"devtools": {Browser: base.Browser, Switches: base.Switches},
	} {
		assert.True(t, base.Differs(&other), name)
	}
	native, polyfill := base, base
	native.Mode, polyfill.Mode = pairbench.WebMCPNative, pairbench.WebMCPPolyfill
	assert.True(t, native.Differs(&polyfill), "another --webmcp mode")
	assert.False(t, native.Differs(&base), "a row from before the mode was recorded differs from nothing")
}
