package bench

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench/agent"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/stats"
)

// DefaultConfig is the configuration a bench starts from when it is told
// nothing else: the default agent on the scripted model, 10 pairs per intent
// over 2 slots, caps of 300 s, 40 turns and 1 USD per agent, a 10 s start
// delay and a 300 ms settle, labels at alpha 0.05 over up to DefaultLooks
// looks, runs under "runs".
func DefaultConfig() Config {
	return Config{Agent: agent.Default, Pairs: 10, Effect: stats.Effect{Speedup: 1.5}, Looks: DefaultLooks, Slots: 2, Model: ScriptedModel, RunsDir: "runs", Alpha: 0.05,
		Caps: rundir.PlanCaps{TimeS: 300, Turns: 40, SpendUSD: 1}, StartDelay: 10 * time.Second, Settle: 300 * time.Millisecond}
}

// DemoConfig is `pairbench demo`'s bench: DefaultConfig on the example
// registry (examples/registry, from a checkout) against the example sites,
// three of its four intents at 7 pairs each with no start delay, caps of
// 120 s and 30 turns, runs under runs/demo. Seven pairs are the fewest with
// which the sign test reaches significance after Holm's correction across
// three intents (7 of 7 faster gives p = 0.0156 <= 0.05/3). The smoke gate
// still checks the treatment setup of the fourth intent,
// books-cheapest-poetry: it has the books intents' start page, where the
// gate requires each registered books tool, its entry tool list_genre too,
// to be live (TestDemoSmokeGateCoversEveryExampleIntent). The demo takes
// one look: at 5 pairs its pooled verdict would stop the run before each
// intent's label can be reached (demo --looks 3 shows that).
func DemoConfig() Config {
	c := DefaultConfig()
	c.Looks = 1
	c.Registry, c.RunsDir, c.ExampleSites = filepath.Join("examples", "registry"), filepath.Join("runs", "demo"), true
	c.Intents = []string{"books-cheapest-by-author", "books-count-by-author", "weather-high-oslo"}
	c.Pairs, c.StartDelay = 7, 0
	c.Caps.TimeS, c.Caps.Turns = 120, 30
	return c
}

// Complete fills what c leaves to the host and the clock, Tools
// (DefaultToolsDir, made absolute), TempDir (the system's) and RunID (a new
// one, NewRunID, unless the run is to be resumed), and checks the whole
// (Check). The errors name the command line's flags.
func (c *Config) Complete() error {
	if c.RunID == "" {
		if c.Resume {
			return fmt.Errorf("%w: --resume needs --run-id, the run to resume (a new id would name no run)", ErrNothingToResume)
		}
		c.RunID = NewRunID(time.Now())
	}
	if err := c.Check(); err != nil {
		return err
	}
	if c.Tools == "" {
		c.Tools = DefaultToolsDir()
	}
	if c.TempDir == "" {
		c.TempDir = os.TempDir()
	}
	var err error
	c.Tools, err = filepath.Abs(c.Tools)
	return err
}

// Check refuses, in one line that names the flag at fault, a configuration
// no bench can run: fewer than one pair or slot, a cap at zero, a
// significance level outside (0, 1), a browser no provider can run (see
// Browsers.Check), an unknown agent, a model it cannot take or a missing
// key, or a run id that is not a plain name (CheckRunID). Open checks the
// agent, the model and the browser again; Check reads nothing and writes
// nothing.
func (c Config) Check() error {
	if (c.Pairs < 1 && !c.PairsAuto) || c.Slots < 1 || c.Adoption < 0 {
		return fmt.Errorf("--pairs and --slots must be at least 1, --adoption at least 0")
	}
	if c.Caps.TimeS <= 0 || c.Caps.Turns <= 0 || c.Caps.SpendUSD <= 0 {
		return fmt.Errorf("every cap must be above zero")
	}
	if !(c.Alpha > 0 && c.Alpha < 1) {
		return fmt.Errorf("--alpha %v: want a level between 0 and 1", c.Alpha)
	}
	if c.Looks < 0 || c.Looks > MaxLooks {
		return fmt.Errorf("--looks %d: want 1 (one look, after every pair) to %d", c.Looks, MaxLooks)
	}
	if _, _, err := c.checkParts(); err != nil {
		return err
	}
	if _, err := c.Judge.planJudge(rundir.Model{}); err != nil {
		return err
	}
	return CheckRunID(c.RunID)
}

// CheckRunID refuses a run id that is not a plain name, one that both the
// runs directory and an artifact store take as the name of one run: a
// single store key segment (artifacts.ValidKey), so no slash or backslash,
// no leading dot, no control character.
func CheckRunID(id string) error {
	if strings.Contains(id, "/") || artifacts.ValidKey(id) != nil {
		return fmt.Errorf("--run-id %q: want a plain name", id)
	}
	return nil
}

// checkParts refuses a browser configuration no provider can run, an
// unknown agent, a model the agent cannot take, or a missing key; it
// returns the agent's name (agent.Default for none) and the model.
func (c Config) checkParts() (name string, _ rundir.Model, _ error) {
	if err := c.Browser.Check(c); err != nil {
		return "", rundir.Model{}, err
	}
	name = c.Agent
	if name == "" {
		name = agent.Default
	}
	m, err := ParseModel(c.Model, c.ModelURL)
	if err != nil {
		return "", rundir.Model{}, err
	}
	if err := agent.Check(name, m, os.Environ()); err != nil {
		return "", rundir.Model{}, err
	}
	return name, m, nil
}

// NewRunID names a run started at now that was given no id: a UTC time
// stamp and a random suffix, so two runs started in the same second never
// share a directory (the second would resume the first).
func NewRunID(now time.Time) string {
	return now.UTC().Format("20060102-150405") + "-" + rand.Text()[:6]
}

// ParseShard reads a shard of a run split across runners, "k/n" with
// 1 <= k <= n; "" is the whole run (0, 0).
func ParseShard(s string) (k, n int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, "/")
	if ok {
		k, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 1 || k < 1 || k > n {
		return 0, 0, fmt.Errorf("--shard %q: want k/n with 1 <= k <= n, e.g. 2/3", s)
	}
	return k, n, nil
}

// ToolsEnv names the environment variable that says where the pinned Node
// tools are (a node_modules directory), for a binary installed apart from
// its checkout.
const ToolsEnv = "PAIRBENCH_TOOLS"

// DefaultToolsDir finds the pinned Node tools: $PAIRBENCH_TOOLS when set,
// else the first node_modules directory of tools/node_modules in the
// working directory, tools/node_modules next to the binary (an install
// that keeps them beside it) and ../tools/node_modules from the binary
// (bin/pairbench in a checkout). It returns the first candidate when none
// is there.
func DefaultToolsDir() string {
	if dir := os.Getenv(ToolsEnv); dir != "" {
		return dir
	}
	candidates := []string{"tools/node_modules"}
	if exe, err := os.Executable(); err == nil {
		candidates = append(candidates, filepath.Join(filepath.Dir(exe), "tools", "node_modules"),
			filepath.Join(filepath.Dir(exe), "..", "tools", "node_modules"))
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && fi.IsDir() {
			return c
		}
	}
	return candidates[0]
}

// ChromiumEnv names the environment variable that gives the local trial
// browsers' Chromium binary (Config.Chromium) when --chromium does not.
const ChromiumEnv = "PAIRBENCH_CHROMIUM"

// DefaultChromium is the Chromium binary used when none is given.
const DefaultChromium = local.DefaultChromiumPath

// toolsMissing is the error of a pinned Node tool that is not in the tools
// directory dir: where pairbench looked and how to point it elsewhere.
func toolsMissing(what, dir string, err error) error {
	return fmt.Errorf("%s is not installed in the pinned Node tools at %s: %w; install them (scripts/setup.sh in pairbench's checkout, or npm ci in its tools/) and give their node_modules with --tools DIR or $%s, or keep tools/node_modules next to the pairbench binary",
		what, dir, err, ToolsEnv)
}
