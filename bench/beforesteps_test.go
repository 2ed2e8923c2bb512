package bench_test

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/agent"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/viewer"
)

// transcriptSections are a pair page's Transcript sections, one per arm:
// the steps and the trial's file links.
var transcriptSections = regexp.MustCompile(`(?s)<h3>Transcript</h3>\n.*?</p>\n`)

// TestTrialsBeforeStepsShowTheirTranscripts: runs recorded before trials
// kept steps.jsonl (testdata/before-steps: a pair of each agent, made by
// pairbench at cce150b, their screenshots left out) show each arm's
// transcript as that pairbench showed it (transcripts.html, cut from its
// pair page), read through the agent's own decoder; and once the same
// steps are in steps.jsonl, as a trial writes them now, the page is the
// same and reads them alone.
func TestTrialsBeforeStepsShowTheirTranscripts(t *testing.T) {
	for _, name := range agent.Names {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join("testdata", "before-steps", name)
			want, err := os.ReadFile(filepath.Join(src, "transcripts.html"))
			require.NoError(t, err)
			run := rundir.RunDir{Path: t.TempDir()}
			require.NoError(t, os.CopyFS(run.Path, os.DirFS(src)))
			plan, err := run.ReadPlan()
			require.NoError(t, err)
			require.Equal(t, name, plan.AgentName())

			sections := func() string {
				t.Helper()
				rep, err := bench.WriteReport(run, run, "")
				require.NoError(t, err)
				assert.Empty(t, rep.Warnings, "rows")
				page, err := os.ReadFile(run.File(viewer.PairPage("weather-high-oslo", 0)))
				require.NoError(t, err)
				return strings.Join(transcriptSections.FindAllString(string(page), -1), "")
			}
			got := sections()
			require.Equal(t, string(want), got, "the transcripts show as they did")
			assert.Contains(t, got, `class="s-call"`)

			// The steps written to steps.jsonl, and the transcript made
			// unreadable: the page shows the steps file's steps.
			for _, arm := range []string{"0-control", "0-treatment"} {
				dir := path.Join(rundir.TrialsDir, "weather-high-oslo", arm)
				var tl rundir.Timeline
				b, err := os.ReadFile(run.File(path.Join(dir, rundir.TrialTimeline)))
				require.NoError(t, err)
				require.NoError(t, json.Unmarshal(b, &tl))
				f, err := os.Open(run.File(path.Join(dir, rundir.TrialTranscript)))
				require.NoError(t, err)
				steps, err := agent.OldTranscripts(name)(f, tl.Transcript)
				f.Close()
				require.NoError(t, err)
				require.NotEmpty(t, steps)
				var out strings.Builder
				for _, s := range steps {
					require.NoError(t, rundir.WriteStep(&out, s))
				}
				require.NoError(t, run.WriteFile(path.Join(dir, rundir.TrialSteps), []byte(out.String())))
				require.NoError(t, run.WriteFile(path.Join(dir, rundir.TrialTranscript), []byte("{\"type\":\"unreadable\"}\n")))
			}
			assert.Equal(t, string(want), sections(), "steps.jsonl shows the same")
		})
	}
}
