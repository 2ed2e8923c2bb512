package bot_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot"
)

// TestLogsCarryNoCredentials: what the service and a bench log may quote a
// git URL with a token or a presigned link; the logger redacts them in both
// formats, and refuses a format it does not know.
func TestLogsCarryNoCredentials(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		log, err := bot.NewLogger(&buf, format)
		require.NoError(t, err)
		log.Warn("fetch failed", "url", "https://x-access-token:ghs_abcdefghijklmnopqrstuvwxyz012345@github.com/o/r.git",
			"err", errors.New("GET https://b.s3.amazonaws.com/k?X-Amz-Signature=deadbeef: 403"))
		out := buf.String()
		assert.NotContains(t, out, "ghs_abcdefghijklmnopqrstuvwxyz012345", format)
		assert.NotContains(t, out, "deadbeef", format)
		assert.Contains(t, out, "github.com/o/r.git", format)
	}
	_, err := bot.NewLogger(&bytes.Buffer{}, "xml")
	assert.ErrorContains(t, err, `--log-format "xml"`)
}
