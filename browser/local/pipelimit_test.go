package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/runner"
)

// TestAPageCannotFloodThePipe is the attack: a page's own tool answers with
// more than the pipe takes. The call fails with the limit named, having
// buffered at most about the limit, and the browser closes.
func TestAPageCannotFloodThePipe(t *testing.T) {
	const limit = 1 << 20
	b := openBrowser(t, newProvider(t, testsite.New(t), func(c *Config) { c.pipeLimit = limit }))
	ctx, cancel := context.WithTimeout(t.Context(), testsite.Patience)
	defer cancel()
	_, err := b.Load(ctx, "http://books.test/flood")
	require.NoError(t, err)

	res, err := b.InvokeTool(ctx, "flood", []byte(`{"n":65536}`))
	require.NoError(t, err, "a result well inside the limit")
	assert.Contains(t, res.Text, strings.Repeat("x", 65536))

	_, err = b.InvokeTool(ctx, "flood", fmt.Appendf(nil, `{"n":%d}`, 2*limit))
	var tooLarge *MessageTooLargeError
	require.ErrorAs(t, err, &tooLarge, "a result over the limit ends the connection")
	assert.Equal(t, limit, tooLarge.Limit)
	assert.ErrorContains(t, err, "over 1 MiB")

	_, err = b.LiveTools(ctx)
	assert.ErrorAs(t, err, &tooLarge, "later calls say why the connection ended")
	require.NoError(t, ctx.Err(), "no call waited out its deadline")
}

// TestBoundedMessages reads NUL-ended messages split over reads in every
// way, as chromedp's pipe reads them.
func TestBoundedMessages(t *testing.T) {
	const limit = 8
	msgs := func(lens ...int) []byte {
		var b []byte
		for i, n := range lens {
			b = append(b, bytes.Repeat([]byte{byte('a' + i)}, n)...)
			b = append(b, 0)
		}
		return b
	}
	for _, tc := range []struct {
		name    string
		stream  []byte
		fits    int // whole messages read before the error, or all of them
		tooLong bool
	}{
		{"all within", msgs(8, 1, 8, 0, 3), 5, false},
		{"one over", msgs(3, 9, 2), 1, true},
		{"the first over", msgs(20), 0, true},
		{"over and never ended", append(msgs(2), bytes.Repeat([]byte("z"), 50)...), 1, true},
	} {
		for chunk := 1; chunk <= len(tc.stream); chunk++ {
			t.Run(fmt.Sprintf("%s/reads of %d", tc.name, chunk), func(t *testing.T) {
				src := &boundedMessages{r: io.NopCloser(&chunked{b: tc.stream, n: chunk}), limit: limit}
				br := bufio.NewReaderSize(src, 16)
				whole := 0
				var err error
				for {
					var m []byte
					if m, err = br.ReadBytes(0); err != nil {
						break
					}
					require.LessOrEqual(t, len(m)-1, limit)
					whole++
				}
				assert.Equal(t, tc.fits, whole)
				var tooLarge *MessageTooLargeError
				assert.Equal(t, tc.tooLong, errors.As(err, &tooLarge), "error: %v", err)
				if !tc.tooLong {
					assert.ErrorIs(t, err, io.EOF)
				}
			})
		}
	}
}

// chunked hands out b at most n bytes a read.
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[n:]
	return n, nil
}

// keptRefusals is the refusals b keeps.
func keptRefusals(b *Browser) []runner.Refusal {
	kept, _ := b.Refusals()
	return kept
}

// TestRefusalsAreCountedButKeptBounded: a page that is refused without end
// costs MaxRefusals records, and every refusal is still counted.
func TestRefusalsAreCountedButKeptBounded(t *testing.T) {
	b := openBrowser(t, newProvider(t, testsite.New(t)))
	ctx, cancel := context.WithTimeout(t.Context(), 2*testsite.Patience)
	defer cancel()
	n := MaxRefusals + 200
	_, err := b.Load(ctx, fmt.Sprintf("http://books.test/refusing?n=%d", n))
	require.NoError(t, err)
	tab := startTab(ctx, t, b)
	require.Eventually(t, func() bool {
		return tab.eval(ctx, "window.asked") == strconv.Itoa(n)
	}, 2*testsite.Patience, 100*time.Millisecond, "the page made its requests")

	kept, total := b.Refusals()
	assert.GreaterOrEqual(t, total, n, "every refusal is counted")
	assert.Equal(t, MaxRefusals, len(kept), "records kept")
	assert.Equal(t, "127.0.0.1", kept[len(kept)-1].Host)
}
