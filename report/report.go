package report

import (
	"math"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/stats"
)

// ReportVersion is the schema version written in every Report's "v" field.
// A change that breaks readers of report.json bumps it.
const ReportVersion = 2

// Plan is what Build needs to know about a run besides its rows: the
// settings the statistics depend on and, per intent, what was planned.
type Plan struct {
	RunID string `json:"run_id"`
	Model Model  `json:"model"`
	// Source says where the registry was read ("" for a local directory),
	// e.g. that a deleted PR branch was read at the PR's last head.
	Source string `json:"source,omitempty"`
	// Alpha is the two-sided significance level; 0 means 0.05.
	Alpha float64 `json:"alpha"`
	// Seed is the plan's recorded seed, carried into the report. No
	// statistic is random: the same rows always give the same report.
	Seed    uint64       `json:"seed"`
	Intents []PlanIntent `json:"intents"`
	// Adoption holds per-domain adoption-stage results when the runner knows
	// them without rows (for example from another shard). A domain listed
	// here overrides what Build counts from adoption-stage rows.
	Adoption []DomainAdoption `json:"adoption,omitempty"`
	// Incomplete, when set, says the runner has pairs still to run: the
	// report is of a run in progress, interrupted or missing a shard, and
	// its labels are not the run's verdict.
	Incomplete *Incomplete `json:"incomplete,omitempty"`
	// Forced lists what changed in the plan between runners of the run,
	// each resumed past it with --force: the trials are not all of one
	// plan.
	Forced []string `json:"forced,omitempty"`
	// Looks, when set, is the look of a group-sequential design the report
	// decides, at Alpha (the look's share of the run's α).
	Looks *Looked `json:"looks,omitempty"`
	// Arms names the two arms when the run configured them; nil for no
	// tools against the registry's tools. Margins, when set, are the
	// head-against-base non-inferiority margins: each intent then gets a
	// NonInferiority verdict.
	Arms    *Arms    `json:"arms,omitempty"`
	Margins *Margins `json:"margins,omitempty"`
	// Later, for a look of a design that curtails (stats.Design.Curtail),
	// are the looks after it: the report then says whether any claim can
	// still be reached at one of them (Decide).
	Later []LaterLook `json:"-"`
}

// LaterLook is a look after the one a report decides: its level and each
// planned intent's pairs by then, by intent id.
type LaterLook struct {
	Alpha float64
	Pairs map[string]int
}

// Incomplete says how much of a run is still to run.
type Incomplete struct {
	// Pending is the number of planned pairs still to run, of Planned.
	Pending int `json:"pending"`
	Planned int `json:"planned"`
	// Why says why in words ("interrupted", "shard 2 of 3 has no rows").
	Why string `json:"why,omitempty"`
}

// Model names the agent's model.
type Model struct {
	Name string `json:"name"`
	// Agent is the agent that ran the model, with its version
	// ("claude-code 2.1.332"); "" for runs that did not record it.
	Agent string `json:"agent,omitempty"`
	// Scripted is true for pairbench's own scripted model: its results test
	// the harness, not an agent.
	Scripted bool `json:"scripted"`
}

// PlanIntent is one intent as planned.
type PlanIntent struct {
	ID        string                `json:"id"`
	Domain    string                `json:"domain"`
	Class     pairbench.AnswerClass `json:"class"`
	Agreement *Agreement            `json:"agreement,omitempty"`
	// Placebo marks an intent the registered tools cannot answer.
	Placebo bool `json:"placebo,omitempty"`
	// Tools are the names of the tools registered in treatment.
	Tools []string `json:"tools,omitempty"`
	// Pairs is the number of pairs planned.
	Pairs int `json:"pairs"`
	// NoBaseTools is true in a run of head against base (Plan.Margins)
	// when control registers nothing for the intent (its domain is new, or
	// its intents alone changed): it gets no non-inferiority verdict.
	NoBaseTools bool `json:"no_base_tools,omitempty"`
	// Criteria are a judged intent's criteria (class judged).
	Criteria []Criterion `json:"criteria,omitempty"`
}

// Agreement is the check applied to an intent's both-correct pairs.
type Agreement struct {
	Kind pairbench.AgreementKind `json:"kind"`
	// Field is a dotted path into the extracted answer ("" is the whole
	// answer).
	Field string `json:"field,omitempty"`
	// Tolerance is the largest price gap that still agrees (cheapest).
	Tolerance float64 `json:"tolerance,omitempty"`
}

// DomainAdoption is the result of a domain's adoption stage: treatment-only
// trials run before any pair.
type DomainAdoption struct {
	Domain string `json:"domain"`
	// Trials counts scored adoption trials; Aborted those that aborted.
	Trials  int `json:"trials"`
	Aborted int `json:"aborted"`
	// Adopted counts trials that invoked a registered tool.
	Adopted int `json:"adopted"`
}

// Report is the statistical verdict on one run. It is plain data: package
// stats renders it, and report.json is its JSON encoding.
type Report struct {
	V      int     `json:"v"`
	RunID  string  `json:"run_id"`
	Model  Model   `json:"model"`
	Source string  `json:"source,omitempty"`
	Alpha  float64 `json:"alpha"`
	// Z is the normal quantile 1-Alpha/2 used by the score intervals.
	Z    float64 `json:"z"`
	Seed uint64  `json:"seed"`
	// Verdict is the run's label: Headline.Label, from the tests pooled
	// over the benched intents; without benched intents (only placebo
	// ones), the worst label over the intents (pairbench.Worst); "" when
	// there are none.
	Verdict pairbench.Label `json:"verdict"`
	// Headline is the run-level verdict (nil without benched intents).
	Headline *Headline        `json:"headline,omitempty"`
	Intents  []Intent         `json:"intents"`
	Adoption []DomainAdoption `json:"adoption,omitempty"`
	// Tools is the per-tool failure table over every attempt, ordered by
	// domain and tool.
	Tools []ToolFailures `json:"tools,omitempty"`
	Run   RunChecks      `json:"run"`
	// SkippedRows counts the rows left out: those Build ignored because
	// they failed pairbench.Row.Validate, and those the report of a run
	// directory left out as not trials of its plan (rundir.PlanRows: another
	// run's, a pair the plan does not have or ran in another order, a
	// repeated trial).
	SkippedRows int `json:"skipped_rows,omitempty"`
	// Incomplete, when set, says this is the report of a run with pairs
	// still to run (Plan.Incomplete): not a verdict. Forced repeats
	// Plan.Forced.
	Incomplete *Incomplete `json:"incomplete,omitempty"`
	Forced     []string    `json:"forced,omitempty"`
	// Looks repeats Plan.Looks.
	Looks *Looked `json:"looks,omitempty"`
	// Arms repeats Plan.Arms; NonInferiority is the run's head-against-base
	// verdict (RunNonInferiority), "" without margins.
	Arms           *Arms    `json:"arms,omitempty"`
	NonInferiority NIResult `json:"non_inferiority,omitempty"`

	// reachable says, for a report built with Plan.Later, whether a claim
	// can still be reached at a later look (stats.ClaimReachable); nil
	// when not asked, as in a report read back from JSON.
	reachable *bool
}

// Final reports whether r is the report of a whole run: no pair is still to
// run. Only a final report is published or posted as a verdict.
func (r *Report) Final() bool { return r.Incomplete == nil }

// Intent is the verdict on one intent.
type Intent struct {
	ID        string                `json:"id"`
	Domain    string                `json:"domain"`
	Class     pairbench.AnswerClass `json:"class"`
	Placebo   bool                  `json:"placebo,omitempty"`
	Tools     []string              `json:"tools,omitempty"`
	Agreement *Agreement            `json:"agreement,omitempty"`
	// Unplanned is true for an intent that has rows but is not in the plan.
	Unplanned bool `json:"unplanned,omitempty"`

	Label pairbench.Label `json:"label"`
	// Why says in words which rule gave Label.
	Why string `json:"why"`

	Pairs PairCounts `json:"pairs"`
	// Table is the 2x2 table of complete pairs.
	Table     Table    `json:"table"`
	Control   ArmStats `json:"control"`
	Treatment ArmStats `json:"treatment"`

	Accuracy Accuracy `json:"accuracy"`
	// Speed is over both-correct pairs; nil when there are none.
	Speed *Speed `json:"speed,omitempty"`
	// Adopters repeats the speed analysis over the both-correct pairs whose
	// treatment trial invoked a registered tool, when that is some pairs but
	// not all. It is not randomized (adoption is chosen by the agent), is
	// not adjusted and feeds no label.
	Adopters *Speed `json:"adopters,omitempty"`
	// Check is the agreement check's result, for intents that have one.
	Check *AgreementCheck `json:"check,omitempty"`

	// MinP is the smallest adjusted p each family could have reached with
	// this intent's usable pairs (the others' p values held fixed); the
	// intent is inconclusive when both are above Alpha.
	MinP MinP `json:"min_p"`
	// NoiseProb is the exact probability, with no effect at all, that this
	// intent gets a speed or accuracy label at its own numbers of discordant
	// and untied pairs (at the unadjusted Alpha).
	NoiseProb float64 `json:"noise_prob"`
	// NonInferiority is head against base at the plan's margins; nil
	// without margins.
	NonInferiority *NonInferiority `json:"non_inferiority,omitempty"`
	// Score is a judged intent's score comparison (score.go); nil for
	// other classes.
	Score *Score `json:"score,omitempty"`
}

// PairCounts accounts for every pair of an intent.
type PairCounts struct {
	// Planned is the plan's pair count (0 when unknown).
	Planned int `json:"planned"`
	// Seen counts distinct pairs with at least one pair-stage row.
	Seen int `json:"seen"`
	// Complete counts pairs whose last attempt in both arms was scored: N.
	Complete int `json:"complete"`
	// LostToAborts counts incomplete pairs where an arm's last attempt
	// aborted; Missing counts planned pairs with no complete result and no
	// abort (not run yet, or an arm's row is absent).
	LostToAborts int `json:"lost_to_aborts"`
	Missing      int `json:"missing"`
	// EnvDiffers lists the pairs, scored in both arms, that are not counted
	// because their arms ran in different WebMCP environments (the rows'
	// webmcp_impl or webmcp_env: another browser version, other switches,
	// the browser's own WebMCP in one arm and the polyfill in the other).
	EnvDiffers []int `json:"webmcp_env_differs,omitempty"`
	// LeftOut counts incomplete pairs per arm: pairs where that arm has no
	// scored last attempt.
	LeftOut ArmCount `json:"left_out"`
	// Aborts counts aborted attempts per arm, in every pair.
	Aborts ArmCount `json:"aborts"`
}

// ArmCount is a count per arm.
type ArmCount struct {
	Control   int `json:"control"`
	Treatment int `json:"treatment"`
}

// Table is the paired 2x2 table over complete pairs.
type Table struct {
	BothCorrect   int `json:"a"` // both arms correct
	TreatmentOnly int `json:"b"` // only treatment correct
	ControlOnly   int `json:"c"` // only control correct
	Neither       int `json:"d"` // neither correct
}

// N returns the number of pairs in the table.
func (t Table) N() int { return t.BothCorrect + t.TreatmentOnly + t.ControlOnly + t.Neither }

// ArmStats describes one arm over an intent's complete pairs.
type ArmStats struct {
	N       int `json:"n"`
	Correct int `json:"correct"`
	// Outcomes counts each scored outcome (aborted never appears).
	Outcomes map[pairbench.Outcome]int `json:"outcomes"`
	// Rate is the share correct with its Wilson score interval.
	Rate stats.Interval `json:"rate"`
	// Wall times in seconds; nil when there is nothing to take a median of.
	MedianWallCorrect *float64 `json:"median_wall_correct"`
	MedianWall        *float64 `json:"median_wall"`
	// MinutesPerCorrect is total wall minutes over the number correct.
	MinutesPerCorrect *float64 `json:"minutes_per_correct"`
	MedianTurns       *float64 `json:"median_turns"`
	MedianInputTokens *float64 `json:"median_input_tokens"`
	MedianCost        *float64 `json:"median_cost_usd"`
	// Adoption is, for treatment, the share of trials that invoked a
	// registered tool with its Wilson interval; nil for control.
	Adoption *Proportion `json:"adoption,omitempty"`
	// Toolless counts correct answers given without a single tool call (one
	// turn or fewer and no WebMCP invocation).
	Toolless int `json:"toolless_correct"`
	// NativeStarts lists the pairs whose trial in this arm started on a page
	// that already had its own WebMCP tools; for control it means control
	// was not tool-free. NativeTools is the union of those tools' names.
	NativeStarts []int    `json:"native_starts,omitempty"`
	NativeTools  []string `json:"native_tools,omitempty"`
	// BrowserRefused lists the pairs whose trial in this arm had requests
	// of its browser refused by the browser's egress (the rows'
	// browser_refusals): a site that needs a destination the browser policy
	// refuses.
	BrowserRefused []int `json:"browser_refused,omitempty"`
	// WebMCP counts this arm's trials by whose WebMCP their start page had
	// (the rows' webmcp_impl); the other N - Native - Polyfill did not
	// record it.
	WebMCP WebMCPCount `json:"webmcp,omitzero"`
}

// WebMCPCount counts trials by whose WebMCP their start page had: the
// browser's own (native) or pairbench's polyfill. Rows from before the
// field record neither.
type WebMCPCount struct {
	Native   int `json:"native,omitempty"`
	Polyfill int `json:"polyfill,omitempty"`
}

// Mixed reports whether some trials had native WebMCP and others the
// polyfill: their registered tools ran through different implementations.
func (w WebMCPCount) Mixed() bool { return w.Native > 0 && w.Polyfill > 0 }

func (w *WebMCPCount) add(r *record) {
	switch {
	case r.is(flagNative):
		w.Native++
	case r.is(flagPolyfill):
		w.Polyfill++
	}
}

func (w *WebMCPCount) plus(o WebMCPCount) {
	w.Native += o.Native
	w.Polyfill += o.Polyfill
}

// Proportion is x of n with its Wilson interval.
type Proportion struct {
	X        int            `json:"x"`
	N        int            `json:"n"`
	Interval stats.Interval `json:"interval"`
}

// Accuracy is the paired accuracy comparison, treatment minus control. It
// rests on the discordant pairs (one arm correct, the other not): with no
// difference each is equally likely to favour either arm.
type Accuracy struct {
	// Delta is the difference in the share correct, (b−c)/N; null when
	// there are no pairs. It is an estimate: the test and intervals are on
	// the share below.
	Delta *float64 `json:"delta"`
	// Discordant is b+c, the pairs the test rests on.
	Discordant int `json:"discordant"`
	// Share is treatment's share of the discordant pairs, b/(b+c), with the
	// Clopper–Pearson interval at 1−α that inverts the exact McNemar test:
	// it holds ½ exactly when P > α.
	Share stats.ExactInterval `json:"share"`
	// P is the exact McNemar p, MidP its mid-p (for information only).
	// Both are 1 when there is no discordant pair.
	P    float64 `json:"p"`
	MidP float64 `json:"mid_p"`
	// Family is the intent's part in the run's accuracy family.
	Family
	// ShareAdj is Share at level 1−Threshold: it holds ½ exactly when PAdj
	// > α. Nil outside the intents' families (the placebo check).
	ShareAdj *stats.ExactInterval `json:"share_adj,omitempty"`
}

// Family is an intent's part in a family of tests across the run's intents
// (docs/statistics.md, Multiplicity).
type Family struct {
	// Tested is true when the intent's pairs could reach significance and
	// it was tested in the family.
	Tested bool `json:"tested"`
	// PAdj is the Holm-adjusted p within the family (1 when not tested).
	PAdj float64 `json:"p_adj"`
	// Threshold is the largest raw p this intent could have had and still
	// be significant after adjustment, the other intents' p held as
	// observed (0 when not tested): P ≤ Threshold exactly when PAdj ≤ α.
	Threshold float64 `json:"threshold"`
}

// Speed compares wall times over pairs where both trials were correct; it is
// conditional on both arms succeeding.
type Speed struct {
	// Pairs counts the pairs used; Faster and Slower count pairs where
	// treatment took less or more time than control, Ties the rest.
	Pairs  int `json:"pairs"`
	Faster int `json:"faster"`
	Slower int `json:"slower"`
	Ties   int `json:"ties"`
	// MedianControl and MedianTreatment are the arms' median wall seconds,
	// RatioOfMedians the first over the second (descriptive, no interval).
	MedianControl   float64  `json:"median_control"`
	MedianTreatment float64  `json:"median_treatment"`
	RatioOfMedians  *float64 `json:"ratio_of_medians"`
	// Speedup is the typical speedup, exp of the Hodges–Lehmann estimate of
	// the per-pair log(control/treatment), with the interval at 1−α that
	// inverts the exact Wilcoxon signed-rank test: it holds 1 exactly when
	// P > α. Above 1, treatment was faster.
	Speedup stats.ExactInterval `json:"speedup"`
	// P is the two-sided signed-rank p.
	P float64 `json:"p"`
	// Family is the intent's part in the run's speed family.
	Family
	// SpeedupAdj is Speedup at level 1−Threshold: it holds 1 exactly when
	// PAdj > α. Nil outside the intents' families.
	SpeedupAdj *stats.ExactInterval `json:"speedup_adj,omitempty"`
	// Randomized is false for a subset the agent chose (Intent.Adopters).
	Randomized bool `json:"randomized"`
	// Composite is the test on time to a correct answer that a speed claim
	// also needs (nil for Adopters and the placebo check).
	Composite *Composite `json:"composite,omitempty"`
	// FromFirstRequest describes the same pairs' times from each agent's
	// first model request, leaving out the agent CLI's start-up, which is
	// the same work in both arms and pulls the wall-time ratio towards 1.
	// Reported beside the wall-time figures; no label reads it. Nil when a
	// pair's rows do not record the start-up.
	FromFirstRequest *SpeedFromFirstRequest `json:"from_first_request,omitempty"`
}

// SpeedFromFirstRequest is Speed's figures over time from the first model
// request (Row.WallSeconds less Row.StartupSeconds).
type SpeedFromFirstRequest struct {
	MedianControl   float64  `json:"median_control"`
	MedianTreatment float64  `json:"median_treatment"`
	RatioOfMedians  *float64 `json:"ratio_of_medians"`
	// Speedup is exp of the Hodges–Lehmann estimate of the per-pair
	// log(control/treatment) of these times (descriptive, no interval).
	Speedup float64 `json:"speedup"`
}

// AgreementCheck is the result of an intent's agreement check over its
// both-correct pairs.
type AgreementCheck struct {
	Kind pairbench.AgreementKind `json:"kind"`
	// Compared counts both-correct pairs whose answers could be compared;
	// Unreadable those where a field was missing or not usable.
	Compared   int `json:"compared"`
	Unreadable int `json:"unreadable"`
	// Missed counts, for cheapest, pairs where that arm's price was higher
	// than the other's by more than the tolerance.
	Missed ArmCount `json:"missed"`
	// Differ counts, for same, pairs whose answers differ as sets.
	Differ int `json:"differ"`
	// Failed is true when the check turns a speed label into mixed.
	Failed bool `json:"failed"`
}

// MinP holds the smallest attainable Holm-adjusted p per family.
type MinP struct {
	Speed    float64 `json:"speed"`
	Accuracy float64 `json:"accuracy"`
}

// ToolFailures is one row of the per-tool failure table.
type ToolFailures struct {
	Domain string `json:"domain"`
	Tool   string `json:"tool"`
	// Registered is false for the page's own (native) tools.
	Registered bool `json:"registered"`
	Calls      int  `json:"calls"`
	Failures   int  `json:"failures"`
	// NotRegistered counts the trials in which the tool, registered by
	// pairbench, did not register on a page (its file failed in the
	// browser); Errors quotes why.
	NotRegistered int `json:"not_registered,omitempty"`
	// Errors are the most common error messages, most frequent first (at
	// most three).
	Errors []ErrorCount `json:"errors,omitempty"`
	// PerArm splits Calls and Failures by arm, in a run whose arms were
	// configured (Report.Arms), where both may call tools.
	PerArm *ToolArmCalls `json:"per_arm,omitempty"`
}

// ErrorCount is an error message and how often it occurred.
type ErrorCount struct {
	Error string `json:"error"`
	Count int    `json:"count"`
}

// RunChecks is the report's footer: checks over the whole run.
type RunChecks struct {
	// Attempts and SpendUSD cover every row, aborted and adoption included.
	Attempts int     `json:"attempts"`
	SpendUSD float64 `json:"spend_usd"`
	// Arms totals each arm over complete pairs.
	Control   ArmTotals `json:"control"`
	Treatment ArmTotals `json:"treatment"`
	// Labels is the label histogram in pairbench.Labels order (zero counts
	// left out).
	Labels []LabelCount `json:"labels"`
	// MedianSpeedup is the median over intents of Speed.Speedup.Est; nil
	// when no intent has speed.
	MedianSpeedup *float64 `json:"median_speedup"`
	// Order compares the treatment effect in AB and BA pairs.
	Order []OrderEffect `json:"order"`
	// StartDelay lists complete pairs whose agents launched more than one
	// second apart after page load.
	StartDelay StartDelay `json:"start_delay"`
	// Caps counts trials in complete pairs that hit each cap, per arm.
	Caps []CapCount `json:"caps"`
	// Placebo pools the placebo intents; nil when there are none.
	Placebo *Placebo `json:"placebo,omitempty"`
	// Noise compares the expected number of labels that pure noise would
	// give with the number observed.
	Noise Noise `json:"noise"`
	// ShapeOnly names intents whose answers are checked by shape only but
	// got a speed or accuracy label.
	ShapeOnly []string `json:"shape_only,omitempty"`
	// WebMCP counts the trials of complete pairs, both arms, by whose
	// WebMCP their start page had; MixedIntents names the intents whose
	// trials had both. The renderings flag a run that has both.
	WebMCP       WebMCPCount `json:"webmcp,omitzero"`
	MixedIntents []string    `json:"webmcp_mixed_intents,omitempty"`
	// Judge is the judge's agreement with itself over every answer of a
	// judged intent it judged twice; nil when it judged none twice.
	Judge *JudgeAgreement `json:"judge_agreement,omitempty"`
}

// ArmTotals sums an arm over complete pairs.
type ArmTotals struct {
	AgentMinutes float64 `json:"agent_minutes"`
	Turns        int     `json:"turns"`
	SpendUSD     float64 `json:"spend_usd"`
}

// LabelCount is one bar of the label histogram.
type LabelCount struct {
	Label pairbench.Label `json:"label"`
	Count int             `json:"count"`
}

// OrderEffect is the treatment effect over the complete pairs run in one
// order, pooled across intents.
type OrderEffect struct {
	Order pairbench.Order `json:"order"`
	Pairs int             `json:"pairs"`
	// Delta is (b-c)/N in these pairs; nil without pairs.
	Delta *float64 `json:"delta"`
	// BothCorrect counts both-correct pairs, and Speedup is the typical
	// speedup (Hodges–Lehmann) over them; nil without any.
	BothCorrect int      `json:"both_correct"`
	Speedup     *float64 `json:"speedup"`
}

// StartDelay is the start-delay check.
type StartDelay struct {
	// Checked counts complete pairs; Apart those more than a second apart.
	Checked int `json:"checked"`
	Apart   int `json:"apart"`
	// Examples names up to ten of them.
	Examples []PairRef `json:"examples,omitempty"`
}

// PairRef names one pair.
type PairRef struct {
	Intent string `json:"intent"`
	Pair   int    `json:"pair"`
}

// CapCount is how many trials hit one cap, per arm.
type CapCount struct {
	Cap       pairbench.Cap `json:"cap"`
	Control   int           `json:"control"`
	Treatment int           `json:"treatment"`
}

// Placebo is the pooled check over intents the registered tools cannot
// answer: a real effect there points at the harness, not the tools.
type Placebo struct {
	Intents  []string `json:"intents"`
	Table    Table    `json:"table"`
	Accuracy Accuracy `json:"accuracy"`
	Speed    *Speed   `json:"speed,omitempty"`
}

// Noise is the expected-noise-labels check.
type Noise struct {
	// Expected is the sum of Intent.NoiseProb over intents that could get a
	// speed or accuracy label; Observed counts the labels they got.
	Expected float64 `json:"expected"`
	Observed int     `json:"observed"`
}

// finite returns a pointer to f, or nil when f is not finite (null in
// JSON).
func finite(f float64) *float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}
