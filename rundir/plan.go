package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
)

// PlanVersion is the schema version written in run.json's "v" field. A
// change that breaks readers of run.json bumps it.
const PlanVersion = 1

// Plan is a run's frozen plan, stored as run.json in the run directory. It is
// written once, before the first trial, and never changed: everything the
// trials and the report depend on is in it, so a run can be resumed, sharded
// and reported on from run.json and rows.jsonl alone.
type Plan struct {
	V         int       `json:"v"`
	RunID     string    `json:"run_id"`
	CreatedAt time.Time `json:"created_at"`
	Versions  Versions  `json:"versions"`
	// Source is where the registry was read.
	Source Source `json:"source,omitzero"`
	// Model is the model both arms' agents use.
	Model Model    `json:"model"`
	Caps  PlanCaps `json:"caps"`
	// Prices names the price table costs are computed with where the agent
	// reports none (PricesVersion).
	Prices string `json:"prices,omitempty"`
	// Allowlist names every tool the agent may call, exactly as the agent
	// declares them to the model (for example "mcp__browser__browser_click").
	Allowlist []string `json:"allowlist"`
	// Seed shuffled the pair orders and seeds the report's bootstrap.
	Seed uint64 `json:"seed"`
	// Alpha is the two-sided significance level of every label.
	Alpha float64 `json:"alpha"`
	// Trial holds what shapes every trial beside its caps; nil in a
	// run.json written before runs recorded it.
	Trial   *TrialSettings  `json:"trial,omitempty"`
	Intents []PlannedIntent `json:"intents"`
	// Browser is how the trials' browsers are confined (the provider's
	// BrowserPolicy); absent in plans made before it was recorded.
	Browser *BrowserPolicy `json:"browser,omitempty"`
	// Arms are the arms the run compares; nil for DefaultArms (no tools
	// against the registry's tools), as every run.json from before arms
	// could be configured. See ArmSpecs.
	Arms *PlanArms `json:"arms,omitempty"`
	// Margins are the non-inferiority margins of a run that benches
	// tools against a revision's (a tools@REV control): the registry's
	// (.pairbench.yml), else report.DefaultMargins. Nil otherwise.
	Margins *report.Margins `json:"margins,omitempty"`
	// AlsoAgainstNone lists the domains this run benches against a
	// revision's tools that the registry's configuration (compare: both)
	// benches against no tools too, in a second run of their own whose id
	// is this one's with "-none" after it (config.AgainstNoneRunID),
	// planned, sharded and merged beside this one; nil for a run without a
	// second, as in every run.json from before runs recorded it.
	AlsoAgainstNone []string `json:"also_against_none,omitempty"`

	// WebMCP is whose WebMCP every trial, in both arms, registers tools with
	// and lists and invokes through (--webmcp): pairbench.WebMCPPolyfill or
	// pairbench.WebMCPNative; absent in plans made before it was recorded,
	// which ran the polyfill (WebMCPMode).
	WebMCP pairbench.WebMCPImpl `json:"webmcp,omitempty"`

	// Looks are the pairs per intent at each look of a group-sequential
	// design (docs/statistics.md, Looks), ascending: planned with the run
	// (PlanOptions.Design) or added by a top-up (TopUp); nil for a run of
	// one look at all its pairs, as every run.json from before runs could
	// be topped up.
	Looks []int `json:"looks,omitempty"`
	// Futility is the p above which both pooled tests' p must lie for a
	// look before the last to stop the run for futility (stats.Design); 0
	// for none, as in a run.json from before runs took their looks.
	// FutilityPower, in the runs planned since, replaces it with a bound
	// for each look from conditional power (stats.Design.FutilityAt).
	Futility      float64 `json:"futility,omitempty"`
	FutilityPower float64 `json:"futility_power,omitempty"`
	// Curtail, in the runs planned since it was added, also stops the run
	// for futility at a look from which no claim can be reached at a later
	// one, whatever the pairs still to run (stats.Design.Curtail); a
	// run.json without it was planned without, and keeps its looks as
	// they were decided.
	Curtail bool `json:"curtail,omitempty"`
	// FutilityOnly makes every look before the last one that stops the
	// run only for futility, spending no α (stats.Design.FutilityOnly):
	// chosen when the run is planned, for a plan too small to be likely
	// to find its planning effect (LookPairs); absent in every run.json
	// planned before, whose looks spend as they did.
	FutilityOnly bool `json:"futility_only,omitempty"`
	// Passed counts the first looks a top-up went on past (a run that
	// stopped at one claiming nothing): they are not decided again.
	Passed int `json:"passed,omitempty"`
	// Stop is the look the run stopped at, and why, once decided (the
	// runner, or merge for a sharded run, records it); only the pairs of
	// the looks up to it are in force (PairsInForce).
	Stop *LookStop `json:"stop,omitempty"`

	// Judge is the judge of a plan with judged intents; nil otherwise.
	Judge *PlanJudge `json:"judge,omitempty"`
}

// BrowserPolicy records, in run.json, the confinement and the policy every
// trial browser runs under, the same in both arms.
type BrowserPolicy struct {
	Provider string `json:"provider"`
	// Sandbox confines the browser's processes; Namespaces are its own.
	Sandbox    string   `json:"sandbox"`
	Namespaces []string `json:"namespaces"`
	// ChromiumSandbox lists the layers of Chromium's own sandbox that run
	// inside it.
	ChromiumSandbox []string      `json:"chromium_sandbox"`
	Egress          BrowserEgress `json:"egress"`
	// BlockedURLs are URL patterns no browser opens.
	BlockedURLs []string `json:"blocked_urls"`
	Downloads   string   `json:"downloads"`
	// DevTools says who reaches the browser's DevTools, and how.
	DevTools string `json:"devtools"`
	// Writable is the only place the browser writes.
	Writable string `json:"writable"`
	// Stealth is true when every browser was asked for the provider's
	// anti-bot measures.
	Stealth bool `json:"stealth,omitempty"`
}

// BrowserEgress is where a trial browser's requests may go.
type BrowserEgress struct {
	// PublicPorts are the ports any public host may be reached on.
	PublicPorts []int `json:"public_ports"`
	// Hosts are mapped to fixed addresses (the example sites, --host).
	Hosts []string `json:"hosts,omitempty"`
	// Never names what no request reaches.
	Never string `json:"never"`
}

// TrialSettings are the run-wide settings that shape each trial or the
// trials a run holds, frozen like the caps: a resume that would change one
// mixes two kinds of trial in one run.
type TrialSettings struct {
	// StartDelayMS is how long after the start page loaded the agent
	// starts; SettleMS Playwright MCP's wait after each action.
	StartDelayMS int64 `json:"start_delay_ms"`
	SettleMS     int64 `json:"settle_ms"`
	// Adoption is how many adoption trials each domain runs before its
	// pairs (0: none).
	Adoption int `json:"adoption"`
	// PairAttempts is how many attempts of a pair may abort before it is
	// given up.
	PairAttempts int `json:"pair_attempts"`
}

// Versions records the version of every component a trial depends on.
type Versions struct {
	Pairbench string `json:"pairbench"`
	// AgentName is the agent benched (pi, claude-code, codex); Agent its
	// version.
	AgentName     string `json:"agent_name,omitempty"`
	Agent         string `json:"agent"`
	Node          string `json:"node"`
	Chromium      string `json:"chromium"`
	PlaywrightMCP string `json:"playwright_mcp"`
}

// PlanCaps are the limits the runner enforces on every trial, as run.json
// stores them; zero means no cap.
type PlanCaps struct {
	TimeS    float64 `json:"time_s"`
	Turns    int     `json:"turns"`
	SpendUSD float64 `json:"spend_usd"`
}

// PlannedIntent is one intent as frozen for the run.
type PlannedIntent struct {
	ID        string                `json:"id"`
	Domain    string                `json:"domain"`
	Class     pairbench.AnswerClass `json:"class"`
	Agreement *report.Agreement     `json:"agreement,omitempty"`
	// Placebo marks an intent the registered tools cannot answer.
	Placebo bool `json:"placebo,omitempty"`
	// Tools names the tools registered in treatment.
	Tools []string `json:"tools"`
	// Arms is what each arm registers and is told, when the plan
	// configures its arms (Plan.Arms); nil otherwise: control registers
	// nothing, treatment Tools.
	Arms *IntentArms `json:"arms,omitempty"`
	// Profile is the signed-in browser profile the intent's trials load;
	// jobs on one profile never overlap.
	Profile string `json:"profile,omitempty"`
	// Fixtures are the intent's fixtures resolved to values at plan time
	// (a days_from_start fixture becomes its date).
	Fixtures map[string]any `json:"fixtures,omitempty"`
	// Files are the content hashes ("sha256:<hex>") of what the intent's
	// trials are made of, by slash path inside the registry: its intent file
	// (prompt, answer schema, rules, fixtures, baseline), its domain's
	// domain.json and every tool file of the domain. A resume whose files
	// differ is refused unless forced.
	Files map[string]string `json:"files,omitempty"`
	// Criteria and PassAt are a judged intent's, as its trials are judged.
	Criteria []Criterion     `json:"criteria,omitempty"`
	PassAt   *float64        `json:"pass_at,omitempty"`
	Pairs    PlannedPairList `json:"pairs"`
}

// Criterion is one weighted criterion of a judged intent as the plan
// freezes it: intents.Criterion's fields, in the same JSON.
type Criterion struct {
	// ID names the criterion in rows and reports.
	ID string `json:"id"`
	// Weight is its share of the score, relative to the others'.
	Weight float64 `json:"weight"`
	// Description is what the judge reads: what a full score needs.
	Description string `json:"description"`
}

// PlannedPair is one pair and the order its trials run in.
type PlannedPair struct {
	Pair  int             `json:"pair"`
	Order pairbench.Order `json:"order"`
}

// ReadPlan reads and validates the run.json at path. A missing file fails
// with an error that matches fs.ErrNotExist; malformed JSON is reported with
// its line and column; every invalid field is named.
func ReadPlan(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s%s: %w", path, jsonPos(data, err), err)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &p, nil
}

// Validate reports every problem that makes p unusable, joined.
func (p *Plan) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if p.V != PlanVersion {
		bad("unsupported plan version %d (want %d)", p.V, PlanVersion)
	}
	if p.RunID == "" {
		bad("missing run_id")
	}
	if p.Model.Provider == "" || p.Model.ID == "" {
		bad("missing model provider or id")
	}
	if !(p.Alpha > 0 && p.Alpha < 1) {
		bad("alpha %v is not between 0 and 1", p.Alpha)
	}
	if p.Caps.TimeS < 0 || p.Caps.Turns < 0 || p.Caps.SpendUSD < 0 {
		bad("negative cap")
	}
	if !p.WebMCP.Valid() {
		bad("unknown webmcp %q (want %s or %s)", p.WebMCP, pairbench.WebMCPPolyfill, pairbench.WebMCPNative)
	}
	ids := make(map[string]bool)
	for i, in := range p.Intents {
		name := fmt.Sprintf("intents[%d]", i)
		if in.ID == "" {
			bad("%s: missing id", name)
		} else {
			name = fmt.Sprintf("intent %q", in.ID)
		}
		if ids[in.ID] && in.ID != "" {
			bad("%s: listed twice", name)
		}
		ids[in.ID] = true
		if !in.Class.Valid() {
			bad("%s: unknown answer class %q", name, in.Class)
		}
		if a := in.Agreement; a != nil && !a.Kind.Valid() {
			bad("%s: unknown agreement kind %q", name, a.Kind)
		}
		pairs := make(map[int]bool)
		for _, pp := range in.Pairs {
			switch {
			case pp.Pair < 0:
				bad("%s: pair %d is negative", name, pp.Pair)
			case pairs[pp.Pair]:
				bad("%s: pair %d listed twice", name, pp.Pair)
			case !pp.Order.Valid():
				bad("%s: pair %d: order %q is not AB or BA", name, pp.Pair, pp.Order)
			}
			pairs[pp.Pair] = true
		}
	}
	if err := p.checkLooks(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// PlannedPairs counts the pairs planned for every intent, in force or
// not.
func (p *Plan) PlannedPairs() int {
	n := 0
	for _, in := range p.Intents {
		n += len(in.Pairs)
	}
	return n
}

// StatsPlan returns what package stats needs of the plan to build the
// report: of the look the run stopped at (Stop) at its share of α, else
// of the last look. The bootstrap is seeded with the plan's seed.
func (p *Plan) StatsPlan() report.Plan {
	k := len(p.Looks) - 1
	if p.Stop != nil {
		k = p.Stop.Look - 1
	}
	sp := p.StatsPlanAt(k)
	sp.Later = nil // the report of the run, not a look to decide
	return sp
}

// StatsPlanAt is StatsPlan for look k (from 0) of a run of looks: its
// pairs, at its share of α (stats.Design.LookAlpha). A run of one look
// ignores k.
func (p *Plan) StatsPlanAt(k int) report.Plan {
	sp := report.Plan{
		RunID: p.RunID,
		Model: report.Model{Name: p.Model.String(), Scripted: p.Model.Scripted},
		Alpha: p.Alpha,
		Seed:  p.Seed,
	}
	if p.Source.Repo != "" {
		sp.Source = p.Source.String()
	}
	if p.Versions.AgentName != "" {
		sp.Model.Agent = p.Versions.AgentName + " " + p.Versions.Agent
	}
	sp.Arms, sp.Margins = p.statsArms(), p.Margins
	upTo := -1 // the pairs a look sees: those numbered below it
	if d := p.Design(); d != nil {
		sp.Alpha = d.LevelAt(p.Alpha, k, p.pooledAt(k))
		sp.Looks = &report.Looked{Pairs: p.Looks, Look: k + 1, RunAlpha: p.Alpha, Blind: d.IsBlind(k)}
		if s := p.Stop; s != nil && s.Look == k+1 {
			sp.Looks.Stop, sp.Looks.Reason = s.Kind, s.Reason
		}
		upTo = p.Looks[k]
		for j := k + 1; d.Curtail && j < len(p.Looks); j++ {
			l := report.LaterLook{Alpha: d.LevelAt(p.Alpha, j, p.pooledAt(j)), Pairs: map[string]int{}}
			for _, in := range p.Intents {
				l.Pairs[in.ID] = min(len(in.Pairs), p.Looks[j])
			}
			sp.Later = append(sp.Later, l)
		}
	}
	for _, in := range p.Intents {
		pi := report.PlanIntent{
			ID:      in.ID,
			Domain:  in.Domain,
			Class:   in.Class,
			Placebo: in.Placebo,
			Tools:   in.Tools,
			Pairs:   len(in.Pairs),
		}
		if upTo >= 0 {
			pi.Pairs = min(len(in.Pairs), upTo)
		}
		if in.Arms != nil && p.Margins != nil {
			pi.NoBaseTools = in.Arms.Control.Absent || in.Arms.Control.None
		}
		if a := in.Agreement; a != nil {
			pi.Agreement = &report.Agreement{Kind: a.Kind, Field: a.Field, Tolerance: a.Tolerance}
		}
		for _, c := range in.Criteria {
			pi.Criteria = append(pi.Criteria, report.Criterion{ID: c.ID, Weight: c.Weight})
		}
		sp.Intents = append(sp.Intents, pi)
	}
	return sp
}

// pooledAt is the pairs of every benched intent look k sees.
func (p *Plan) pooledAt(k int) int {
	n := 0
	for _, in := range p.Intents {
		if !in.Placebo {
			n += min(len(in.Pairs), p.Looks[k])
		}
	}
	return n
}

// jsonPos returns ":line:col" of a JSON decoding error in data, or "" when
// the error carries no offset.
func jsonPos(data []byte, err error) string {
	var off int64
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	default:
		return ""
	}
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return fmt.Sprintf(":%d:%d", line, col)
}
