package pairbench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// RowError is a rows.jsonl line that could not be used.
type RowError struct {
	Line int
	Err  error
}

func (e *RowError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *RowError) Unwrap() error { return e.Err }

// ReadRows reads a rows.jsonl stream.
//
// A last line without its newline that does not parse is the trace of a writer
// killed mid-append: it is skipped and reported as partial (its line number),
// and the rows before it are returned. Any other bad line fails the read with
// a *RowError naming its line; empty lines are ignored. Lines may be of any
// length.
func ReadRows(r io.Reader) (rows []Row, partial int, err error) {
	br := bufio.NewReaderSize(r, 1<<16)
	for line := 1; ; line++ {
		b, rerr := br.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return rows, 0, fmt.Errorf("read rows: %w", rerr)
		}
		complete := len(b) > 0 && b[len(b)-1] == '\n'
		b = bytes.TrimSpace(b)
		if len(b) > 0 {
			row, perr := ParseRow(b)
			switch {
			case perr == nil:
				rows = append(rows, row)
			case !complete:
				return rows, line, nil
			default:
				return rows, 0, &RowError{Line: line, Err: perr}
			}
		}
		if rerr != nil {
			return rows, 0, nil
		}
	}
}

// ParseRow decodes and validates one rows.jsonl line.
func ParseRow(b []byte) (Row, error) {
	var row Row
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&row); err != nil {
		return Row{}, fmt.Errorf("decode row: %w", err)
	}
	if dec.More() {
		return Row{}, errors.New("decode row: trailing data after the object")
	}
	if err := row.Validate(); err != nil {
		return Row{}, err
	}
	return row, nil
}

// AppendRow encodes row as one rows.jsonl line, newline included.
func AppendRow(dst []byte, row Row) ([]byte, error) {
	row.V = RowVersion
	b, err := json.Marshal(row)
	if err != nil {
		return dst, fmt.Errorf("encode row: %w", err)
	}
	return append(append(dst, b...), '\n'), nil
}
