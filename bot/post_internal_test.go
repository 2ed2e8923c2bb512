package bot

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRenderStickyClipsAnOversizedBody(t *testing.T) {
	target := Target{Owner: "o", Repo: "r", PR: 1, SHA: strings.Repeat("a", 40)}
	es := []entry{{SHA: target.SHA, Run: "r1"}, {SHA: strings.Repeat("b", 40), Run: "r0", Verdict: "better"}}
	var asked int
	out := renderSticky(target, es, func(limit int) string {
		asked = limit
		return strings.Repeat("é", MaxCommentChars) // ignores the limit
	})
	assert.LessOrEqual(t, len(out), MaxCommentChars)
	assert.Less(t, asked, MaxCommentChars)
	assert.Equal(t, es, readHistory(out), "the history survives the clip")
}

func TestReadHistoryToleratesGarbage(t *testing.T) {
	for _, body := range []string{"", stickyMarker, historyPrefix + "!!!" + historySuffix, historyPrefix + "e30=", historyPrefix + "bnVsbA==" + historySuffix} {
		assert.Empty(t, readHistory(body), body)
	}
}
