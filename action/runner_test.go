package action

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// This file runs action.yml's steps on this machine the way a runner runs a
// composite action: each step's if: decides, its env: templates are
// expanded, its run: goes to `bash --noprofile --norc -eo pipefail`, and
// its GITHUB_OUTPUT file becomes steps.<id>.outputs. Steps that use other
// actions (setup-go, upload-artifact) are recorded with their evaluated
// with: values instead, as are steps a test skips.

// actionMeta is the part of action.yml the runner needs.
type actionMeta struct {
	Inputs map[string]struct {
		Default string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Value string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string       `yaml:"using"`
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
}

type actionStep struct {
	Name  string            `yaml:"name"`
	ID    string            `yaml:"id"`
	If    string            `yaml:"if"`
	Uses  string            `yaml:"uses"`
	Run   string            `yaml:"run"`
	Shell string            `yaml:"shell"`
	Env   map[string]string `yaml:"env"`
	With  map[string]string `yaml:"with"`
}

func readActionMeta(path string) (*actionMeta, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m actionMeta
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &m, nil
}

// job is one workflow job that uses the Action once.
type job struct {
	Root   string            // the Action's checkout (github.action_path)
	Work   string            // the workspace, where steps run
	Env    map[string]string // the runner's environment (GITHUB_*, AWS_*, ...)
	Inputs map[string]string // the with: of the uses: step
	Event  map[string]any    // the triggering event's payload
	// Skip names steps not to run here, with the reason.
	Skip map[string]string
	// Built, if set, is a directory holding the binaries an earlier job's
	// buildStep made from the same checkout: this job's buildStep links
	// them into its PB_BIN's directory instead of building them again.
	Built string
}

// buildStep is the step of action.yml that builds pairbench into $PB_BIN
// and, beside it, the sandbox's init.
const buildStep = "Build pairbench"

// stepResult says what happened to one step.
type stepResult struct {
	Name    string
	Ran     bool              // a run: step executed
	Uses    string            // for a uses: step that would run
	With    map[string]string // its evaluated with:
	Skipped string            // why a step meant to run did not
	Failed  bool
	Env     map[string]string // the evaluated env: of a run: step
	Took    time.Duration     // how long a run: step ran
}

// jobResult is what a job left behind.
type jobResult struct {
	Outputs map[string]string // the Action's outputs
	Summary string            // GITHUB_STEP_SUMMARY
	Failed  bool
	Steps   []stepResult
	Log     string // every step's output
	Temp    string // RUNNER_TEMP
}

// timings lists how long each step that ran took, for the test's log.
func (r jobResult) timings() string {
	var b strings.Builder
	for _, s := range r.Steps {
		if s.Ran {
			fmt.Fprintf(&b, "%s %.1fs; ", s.Name, s.Took.Seconds())
		}
	}
	return strings.TrimSuffix(b.String(), "; ")
}

func (r jobResult) step(name string) stepResult {
	for _, s := range r.Steps {
		if s.Name == name {
			return s
		}
	}
	return stepResult{}
}

// runJob runs the Action's steps for j in a fresh RUNNER_TEMP under tmp.
func runJob(meta *actionMeta, j job, tmp string) (jobResult, error) {
	res := jobResult{Outputs: map[string]string{}, Temp: filepath.Join(tmp, "runner-temp")}
	if err := os.MkdirAll(res.Temp, 0o755); err != nil {
		return res, err
	}
	eventPath := filepath.Join(tmp, "event.json")
	summaryPath := filepath.Join(tmp, "step-summary.md")
	data, err := json.Marshal(j.Event)
	if err != nil {
		return res, err
	}
	if err := os.WriteFile(eventPath, data, 0o644); err != nil {
		return res, err
	}
	if err := os.WriteFile(summaryPath, nil, 0o644); err != nil {
		return res, err
	}

	inputs := map[string]any{}
	for name, in := range meta.Inputs {
		inputs[name] = in.Default
	}
	for name, v := range j.Inputs {
		if _, ok := meta.Inputs[name]; !ok {
			return res, fmt.Errorf("input %q is not declared in action.yml", name)
		}
		inputs[name] = v
	}
	github := map[string]any{"action_path": j.Root, "workspace": j.Work, "event": j.Event}
	for k, v := range j.Env {
		if name, ok := strings.CutPrefix(k, "GITHUB_"); ok {
			github[strings.ToLower(name)] = v
		}
	}
	steps := map[string]any{}
	ctx := &exprContext{vars: map[string]any{
		"inputs": inputs, "github": github, "steps": steps,
		"runner": map[string]any{"temp": res.Temp, "os": "Linux"},
	}}

	base := hostEnv()
	for k, v := range j.Env {
		base[k] = v
	}
	base["RUNNER_TEMP"] = res.Temp
	base["GITHUB_ACTION_PATH"] = j.Root
	base["GITHUB_WORKSPACE"] = j.Work
	base["GITHUB_EVENT_PATH"] = eventPath
	base["GITHUB_STEP_SUMMARY"] = summaryPath

	var log bytes.Buffer
	for i, st := range meta.Runs.Steps {
		sr := stepResult{Name: st.Name}
		run, err := ctx.condition(st.If)
		if err != nil {
			return res, fmt.Errorf("step %q: if: %w", st.Name, err)
		}
		if !run {
			res.Steps = append(res.Steps, sr)
			continue
		}
		if why, ok := j.Skip[st.Name]; ok {
			sr.Skipped = why
			res.Steps = append(res.Steps, sr)
			continue
		}
		if st.Name == buildStep && j.Built != "" {
			bin, err := ctx.template(st.Env["PB_BIN"])
			if err != nil || bin == "" {
				return res, fmt.Errorf("step %q: no PB_BIN to link the earlier build into (%v)", st.Name, err)
			}
			if err := linkBuild(j.Built, filepath.Dir(bin)); err != nil {
				return res, fmt.Errorf("step %q: %w", st.Name, err)
			}
			sr.Skipped = "linked the binaries an earlier job built"
			res.Steps = append(res.Steps, sr)
			continue
		}
		if st.Uses != "" {
			sr.Uses, sr.With = st.Uses, map[string]string{}
			for k, v := range st.With {
				if sr.With[k], err = ctx.template(v); err != nil {
					return res, fmt.Errorf("step %q: with.%s: %w", st.Name, k, err)
				}
			}
			res.Steps = append(res.Steps, sr)
			continue
		}
		if st.Shell != "bash" {
			return res, fmt.Errorf("step %q: shell %q; the Action's run steps use bash", st.Name, st.Shell)
		}
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		sr.Env = map[string]string{}
		for k, v := range st.Env {
			if sr.Env[k], err = ctx.template(v); err != nil {
				return res, fmt.Errorf("step %q: env.%s: %w", st.Name, k, err)
			}
			env[k] = sr.Env[k]
		}
		outPath := filepath.Join(tmp, fmt.Sprintf("output-%d", i))
		if err := os.WriteFile(outPath, nil, 0o644); err != nil {
			return res, err
		}
		env["GITHUB_OUTPUT"] = outPath

		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", st.Run)
		cmd.Dir = j.Work
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		fmt.Fprintf(&log, "::group::%s\n", st.Name)
		cmd.Stdout, cmd.Stderr = &log, &log
		began := time.Now()
		runErr := cmd.Run()
		sr.Took = time.Since(began)
		fmt.Fprintf(&log, "::endgroup::\n")
		sr.Ran = true
		outputs, err := readOutputs(outPath)
		if err != nil {
			return res, fmt.Errorf("step %q: %w", st.Name, err)
		}
		outcome := "success"
		if runErr != nil {
			sr.Failed, ctx.failed, outcome = true, true, "failure"
		}
		if st.ID != "" {
			steps[st.ID] = map[string]any{"outputs": outputs, "outcome": outcome, "conclusion": outcome}
		}
		res.Steps = append(res.Steps, sr)
	}
	res.Failed = ctx.failed
	res.Log = log.String()
	for name, out := range meta.Outputs {
		if res.Outputs[name], err = ctx.template(out.Value); err != nil {
			return res, fmt.Errorf("output %s: %w", name, err)
		}
	}
	summary, err := os.ReadFile(summaryPath)
	res.Summary = string(summary)
	return res, err
}

// hostEnv is this process's environment without anything a runner or the
// Action sets, so a test sees only what its job gives.
func hostEnv() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "GITHUB_"), strings.HasPrefix(k, "RUNNER_"), strings.HasPrefix(k, "PB_"),
			strings.HasPrefix(k, "AWS_"), strings.HasPrefix(k, "INPUT_"):
			continue
		}
		env[k] = v
	}
	return env
}

// readOutputs parses a GITHUB_OUTPUT file: name=value lines and
// name<<DELIMITER blocks.
func readOutputs(path string) (map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]any{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if name, delim, ok := strings.Cut(line, "<<"); ok && !strings.Contains(name, "=") {
			var lines []string
			for sc.Scan() && sc.Text() != delim {
				lines = append(lines, sc.Text())
			}
			out[name] = strings.Join(lines, "\n")
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("GITHUB_OUTPUT line %q is neither name=value nor name<<DELIMITER", line)
		}
		out[name] = value
	}
	return out, sc.Err()
}

// linkBuild hard-links (or, across file systems, copies) every file of
// from into the directory to, which it makes.
func linkBuild(from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, ent := range entries {
		src, dst := filepath.Join(from, ent.Name()), filepath.Join(to, ent.Name())
		if os.Link(src, dst) == nil {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			return err
		}
	}
	return nil
}
