package local

import (
	"bytes"
	"fmt"
	"io"
)

// DefaultPipeMessageLimit bounds one message Chromium writes on pairbench's
// own DevTools pipe. The largest pairbench asks for are a screenshot of the
// trial's viewport (a few MB of base64 PNG) and a tool's result, which a
// model reads whole (a million tokens is about 4 MB of text). A hostile
// page's tool can answer with far more: 256 MiB made the launcher's heap
// reach 2.2 GB, as decoding copies a message several times over.
const DefaultPipeMessageLimit = 32 << 20

// MessageTooLargeError is why pairbench's pipe to a browser ended: one
// message grew past the limit before its end, so it was never buffered or
// decoded whole. Which command it answered cannot be known unread, so the
// connection ends and every pending call fails with this error.
type MessageTooLargeError struct{ Limit int }

func (e *MessageTooLargeError) Error() string {
	return fmt.Sprintf("the browser sent a DevTools message over %d MiB (a page's tool result, most likely); pairbench closed its connection", e.Limit>>20)
}

// boundedMessages reads a stream of NUL-ended messages and fails once the
// current message exceeds limit bytes, so a reader above it that buffers a
// whole message (chromedp.PipeConn) holds at most limit plus one read.
type boundedMessages struct {
	r     io.ReadCloser
	limit int
	n     int // bytes of the current message read so far
}

func (b *boundedMessages) Read(p []byte) (int, error) {
	if b.n > b.limit {
		return 0, &MessageTooLargeError{Limit: b.limit}
	}
	if len(p) > b.limit {
		p = p[:b.limit] // so a message begun and ended within p fits too
	}
	n, err := b.r.Read(p)
	end := bytes.IndexByte(p[:n], 0)
	switch {
	case end < 0:
		b.n += n
	case b.n+end > b.limit:
		b.n += end
	default:
		b.n = n - bytes.LastIndexByte(p[:n], 0) - 1
	}
	if b.n > b.limit {
		// The over-long message began before p, or at its start: nothing
		// whole is lost with p, and its end is not let through.
		return 0, &MessageTooLargeError{Limit: b.limit}
	}
	return n, err
}

func (b *boundedMessages) Close() error { return b.r.Close() }
