package bot

import (
	"fmt"
	"io"
	"log/slog"
)

// NewLogger returns the operator's logger: records in format ("text" or
// "json") on w, every string and error passed through RedactSecrets, so no
// log line carries a credential (a URL's user info, a token, a presigned
// signature).
func NewLogger(w io.Writer, format string) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		switch v := a.Value.Any().(type) {
		case string:
			return slog.String(a.Key, RedactSecrets(v))
		case error:
			return slog.String(a.Key, RedactSecrets(v.Error()))
		}
		return a
	}}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}
