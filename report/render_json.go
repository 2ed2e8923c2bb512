package report

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes r as indented JSON followed by a newline: report.json,
// for machines. Fields appear in the order of the Report type's
// declaration and map keys sorted, so the same report always gives the same
// bytes; numbers that are not finite are written as null (see Interval).
func WriteJSON(w io.Writer, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write json report: %w", err)
	}
	return nil
}

// ReadJSON decodes a report written by WriteJSON. It refuses a report of
// another schema version.
func ReadJSON(r io.Reader) (*Report, error) {
	var rep Report
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return nil, fmt.Errorf("decode report: %w", err)
	}
	if rep.V != ReportVersion {
		return nil, fmt.Errorf("unsupported report version %d (want %d)", rep.V, ReportVersion)
	}
	return &rep, nil
}
