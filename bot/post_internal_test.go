package bot

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenderRollupClipsAnOversizedBody(t *testing.T) {
	t.Parallel()
	cur := entry{SHA: strings.Repeat("a", 40), Run: "r1"}
	earlier := []entry{{SHA: strings.Repeat("b", 40), Run: "r0", Verdict: "better"}}
	var asked int
	out := renderRollup(rollup{sha: cur.SHA, run: cur.Run, earlier: earlier, withHistory: true, current: &cur, body: func(limit int) string {
		asked = limit
		return strings.Repeat("é", MaxCommentChars) // ignores the limit
	}})
	assert.LessOrEqual(t, len(out), MaxCommentChars)
	assert.Less(t, asked, MaxCommentChars)
	assert.Equal(t, append([]entry{cur}, earlier...), readHistory(out), "the history survives the clip")
}

// TestRollupKeepsTenEarlierCommitsWhateverTheLinks gives the rollup 50
// earlier commits with presigned-length links (~720 characters, as S3 role
// credentials make them) and a report that takes all the room it is given:
// at least 10 earlier commits stay, with their links, and the comment fits.
func TestRollupKeepsTenEarlierCommitsWhateverTheLinks(t *testing.T) {
	t.Parallel()
	link := "https://bucket.s3.eu-west-1.amazonaws.com/runs/report.html?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Security-Token=" + strings.Repeat("T", 600)
	cur := entry{SHA: strings.Repeat("a", 40), Run: "r-head"}
	var earlier []entry
	for i := range 50 {
		earlier = append(earlier, entry{SHA: fmt.Sprintf("%040x", i+1), Run: fmt.Sprintf("r%02d", i), Verdict: "better", Link: link})
	}
	for _, withHistory := range []bool{true, false} {
		out := renderRollup(rollup{sha: cur.SHA, run: cur.Run, earlier: earlier, withHistory: withHistory, current: &cur,
			body: func(limit int) string { return strings.Repeat("x", limit) }})
		require.LessOrEqual(t, len(out), MaxCommentChars)
		shown := strings.Count(out, "](https://bucket")
		assert.GreaterOrEqual(t, shown, minEarlier, "history marker %v", withHistory)
		for i := range minEarlier {
			assert.Contains(t, out, fmt.Sprintf("[r%02d](", i), "the newest earlier commits are kept")
		}
	}
}

func TestReadHistoryToleratesGarbage(t *testing.T) {
	t.Parallel()
	for _, body := range []string{"", stickyMarker, historyPrefix + "!!!" + historySuffix, historyPrefix + "e30=", historyPrefix + "bnVsbA==" + historySuffix} {
		assert.Empty(t, readHistory(body), body)
	}
	// The base64 history of earlier versions still reads.
	old := historyPrefix + "W3sic2hhIjoiYWJjIiwicnVuIjoicjEifV0=" + historySuffix
	assert.Equal(t, []entry{{SHA: "abc", Run: "r1"}}, readHistory(old))
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"git fetch https://x-access-token:ghs_abcdefghijklmnopqrstuvwxyz0123@github.com/o/r.git: exit 128": "git fetch https://***@github.com/o/r.git: exit 128",
		"token ghp_0123456789abcdefghijABCDEFGHIJ leaked":                                                  "token *** leaked",
		"see file:///var/lib/pairbench/runs/pr1/report.html":                                               "see (a file on the server)",
		"open /var/lib/pairbench/runs/pr1-abc/run.json: no such file":                                      "open …/pr1-abc/run.json: no such file",
		"GET https://b.s3.amazonaws.com/k?X-Amz-Signature=deadbeef&x=1":                                    "GET https://b.s3.amazonaws.com/k?X-Amz-Signature=***&x=1",
		"AKIAABCDEFGHIJKLMNOP is the key":                                                                  "*** is the key",
		"domains/books.example/tools/find.js:3: bad":                                                       "domains/books.example/tools/find.js:3: bad",
	} {
		assert.Equal(t, want, Redact(in), in)
	}
}
