package local

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/sandbox"
)

// logCount is a log destination that counts what it is given.
type logCount struct {
	mu    sync.Mutex
	bytes int
	lines int
	text  strings.Builder // the first 64 KiB
}

func (c *logCount) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bytes += len(p)
	c.lines += bytes.Count(p, []byte("\n"))
	if room := 64<<10 - c.text.Len(); room > 0 {
		c.text.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *logCount) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("%d bytes in %d lines", c.bytes, c.lines)
}

// testGuard is a guard without sockets, logging to a count: its commands
// and HTTP refusals are driven by hand.
func testGuard() (*devToolsGuard, *logCount) {
	c := &logCount{}
	log := slog.New(slog.NewTextHandler(c, nil))
	return &devToolsGuard{log: log, refusals: sandbox.NewRefusalLog(log, "devtools guard")}, c
}

// clientFrameHeader is a masked client frame's header (zero key) announcing
// length bytes, whatever follows.
func clientFrameHeader(fin bool, op byte, length uint64) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	h := []byte{b0, 0x80 | 127}
	h = binary.BigEndian.AppendUint64(h, length)
	return append(h, 0, 0, 0, 0)
}

// wrappedContinuation is a message's first fragment (10 bytes), then a
// continuation whose length, added to those 10 bytes, wraps around 2^64
// to less than the message limit.
func wrappedContinuation() []byte {
	first := append(clientFrameHeader(false, opText, 10), []byte(`{"id":1,"m`)...)
	return append(first, clientFrameHeader(true, opContinuation, 1<<64-10+5)...)
}

// TestGuardClosesOnAWrappedLength: a continuation frame whose 64-bit length
// wraps the message-size check panicked the guard's handler ("cannot be
// negative", with a stack in the runner's log). It closes the connection
// with a named reason now.
func TestGuardClosesOnAWrappedLength(t *testing.T) {
	g, log := testGuard()
	var up, reply bytes.Buffer
	err := g.relayCommands(bufio.NewReader(bytes.NewReader(wrappedContinuation())), &frameWriter{w: &up, mask: true}, &frameWriter{w: &reply})
	var perr *errProtocol
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, uint16(1009), perr.code)
	// The client's close frame: 1009 and the reason.
	require.Greater(t, reply.Len(), 4)
	assert.Equal(t, byte(0x80|opClose), reply.Bytes()[0])
	assert.Equal(t, uint16(1009), binary.BigEndian.Uint16(reply.Bytes()[2:4]))
	assert.Contains(t, reply.String(), "a message over 67108864 bytes")
	assert.True(t, strings.Contains(log.text.String(), "a message over 67108864 bytes"), "the log says why")
}

// FuzzGuardFrames reads any byte stream as a client's frames: the guard
// never panics, whatever the lengths say (seeded with lengths near 2^63 and
// 2^64, alone and added to a fragment's), and ends every stream that breaks
// its rules with a close code.
func FuzzGuardFrames(f *testing.F) {
	f.Add(wrappedContinuation())
	for _, n := range []uint64{1<<63 - 1, 1 << 63, 1<<63 + 1, 1<<64 - 1, 1<<64 - 10, 1<<64 - 11, maxCDPMessage, maxCDPMessage + 1} {
		f.Add(clientFrameHeader(true, opText, n))
		first := append(clientFrameHeader(false, opText, 10), []byte(`{"id":1,"m`)...)
		f.Add(append(first, clientFrameHeader(true, opContinuation, n)...))
		f.Add(append(first, clientFrameHeader(true, opPing, n)...))
	}
	f.Add(append(clientFrameHeader(true, opText, 30), []byte(`{"id":1,"method":"Page.enable"}`)...))
	f.Fuzz(func(t *testing.T, stream []byte) {
		g, _ := testGuard()
		err := g.relayCommands(bufio.NewReader(bytes.NewReader(stream)), &frameWriter{w: io.Discard, mask: true}, &frameWriter{w: io.Discard})
		var perr *errProtocol
		if err != nil && !errors.As(err, &perr) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("the stream ended with %v", err)
		}
	})
}

// TestGuardLogStaysSmall drives the guard as the hostile client of issue 28
// did (a real run's agent wrote 25.6 MB of runner log in 44 s): commands
// refused with a 1 MiB sessionId, 2,000 refused commands, 2,000 refused HTTP
// requests with long paths, and a wrapped length. Every logged value is
// clipped to 512 bytes, and past the first 100 refusals the guard only
// counts them, in a line every 10 s and one at the end.
func TestGuardLogStaysSmall(t *testing.T) {
	g, log := testGuard()
	discard := &frameWriter{w: io.Discard}
	huge := strings.Repeat("S", 1<<20)
	for i := range 20 {
		msg := fmt.Sprintf(`{"id":%d,"method":"Extensions.loadUnpacked","sessionId":%q,"params":{"path":"/tmp"}}`, i, huge)
		require.NoError(t, g.command([]byte(msg), discard, discard))
	}
	for i := range 2000 {
		msg := fmt.Sprintf(`{"id":%d,"method":"Target.createBrowserContext","sessionId":"s%d","params":{"proxyServer":"http://10.0.0.1"}}`, i, i)
		require.NoError(t, g.command([]byte(msg), discard, discard))
	}
	for i := range 2000 {
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, fmt.Sprintf("/json/new?%d%s", i, strings.Repeat("u", 8<<10)), nil))
		require.Equal(t, http.StatusForbidden, rec.Code)
	}
	g.relayCommands(bufio.NewReader(bytes.NewReader(wrappedContinuation())), discard, discard)
	g.refusals.Flush()
	t.Logf("the guard's log: %s", log)
	assert.Less(t, log.bytes, 128<<10, "the guard's log: %s", log)
	assert.LessOrEqual(t, log.lines, 105, "the guard's log: %s", log)
	assert.True(t, strings.Contains(log.text.String(), "total=4021"), "the log says how many refusals there were")
	assert.True(t, strings.Contains(log.text.String(), "(1048576 bytes)"), "a clipped value says how long it was")
}
