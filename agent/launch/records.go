package launch

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/pairbench/pairbench"
)

// MaxRecord is the longest line of an agent's output the runner reads as
// a record (an event of its stream, a line of its diagnostics); no agent
// writes one near it (a screenshot in an event is a few MiB).
const MaxRecord = 64 << 20

// Records calls f with each line of r, its newline included, until f
// returns a cap or r ends. A line longer than max is skipped whole, read
// in pieces: what an agent writes is the agent's to choose, and a line
// held whole however long would let it take the runner's memory. f must
// not keep line: its bytes are reused.
func Records(r io.Reader, max int, f func(line []byte) pairbench.Cap) (pairbench.Cap, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var parts [][]byte // a line longer than br's buffer, so far
	n, skip := 0, false
	for {
		chunk, err := br.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		if n += len(chunk); n > max {
			skip, parts = true, nil
		} else if full || parts != nil {
			parts = append(parts, bytes.Clone(chunk))
		}
		if full {
			continue
		}
		line := chunk
		if parts != nil {
			line = bytes.Join(parts, nil)
		}
		if !skip && len(bytes.TrimSpace(line)) > 0 {
			if c := f(line); c != "" {
				return c, nil
			}
		}
		parts, n, skip = nil, 0, false
		if errors.Is(err, io.EOF) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
	}
}
