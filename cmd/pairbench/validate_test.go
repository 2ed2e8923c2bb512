package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/internal/clitest"
)

const exampleRegistry = clitest.ExampleRegistry

// runCLI runs pairbench with args and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(clitest.AllowInconclusive(args), strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestValidateExampleRegistry(t *testing.T) {
	code, out, errOut := runCLI(t, "validate", exampleRegistry)
	assert.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Equal(t, exampleRegistry+": ok: 2 domains, 4 tools (3 registered), 4 intents; every baseline answer grades correct\n", out)
	assert.Empty(t, errOut)
}

const (
	cheapestYAML = "bench/intents/books.example/books-cheapest-by-author.yaml"
	countYAML    = "bench/intents/books.example/books-count-by-author.yaml"
	osloYAML     = "bench/intents/weather.example/weather-high-oslo.yaml"
)

func TestValidateProblems(t *testing.T) {
	cases := []struct {
		name  string
		edits [][3]string
		want  []string // lines with DIR for the registry
	}{
		{
			name:  "wrong baseline answer",
			edits: [][3]string{{cheapestYAML, `price: "$7.49"`, `price: "$9.75"`}},
			want: []string{
				`DIR/` + cheapestYAML + `:39: baseline answer grades wrong: rule money price (DIR/` + cheapestYAML + `:24): got "$9.75", want 7.49`,
			},
		},
		{
			name:  "baseline answer off the schema",
			edits: [][3]string{{osloYAML, "    high_c: 4\n", "    high_c: four\n"}},
			want: []string{
				`DIR/` + osloYAML + `:32: baseline answer grades wrong: answer schema: at '/high_c': got string, want number`,
			},
		},
		{
			name:  "unknown rule kind",
			edits: [][3]string{{countYAML, "  - rule: distinct", "  - rule: unique"}},
			want: []string{
				`DIR/` + countYAML + `:28: rule 3 (unique titles): unknown rule "unique" (known: date, date_after, date_before, distinct, equals, items_above, len, max, min, money, money_max, money_min, one_of, regex, set_equals)`,
			},
		},
		{
			name: "baseline steps the browser tools do not take",
			edits: [][3]string{
				{cheapestYAML, "    - tool: browser_type\n      args: {element: Author,", "    - tool: browser_clik\n      args: {element: Author,"},
				{cheapestYAML, "    - tool: browser_click\n      args: {element: Next page}\n  answer", "    - tool: browser_click\n      args: {elemnt: Next page}\n  answer"},
				{countYAML, "    - tool: browser_navigate\n      args: {url:", "    - tool: browser_navigate\n      args: {href:"},
			},
			want: []string{
				`DIR/` + cheapestYAML + `:33: baseline step: "browser_clik" is not a browser tool (did you mean browser_click?); the tools are browser_navigate, browser_navigate_back, browser_snapshot, browser_find, browser_click, browser_type, browser_fill_form, browser_select_option, browser_press_key, browser_hover, browser_wait_for, browser_tabs, browser_take_screenshot, browser_handle_dialog`,
				`DIR/` + cheapestYAML + `:37: baseline step browser_click: no argument "elemnt" (did you mean element?); it takes button, doubleClick, element, modifiers, target`,
				`DIR/` + cheapestYAML + `:37: baseline step browser_click: no element: name the element it acts on (element: the words on the page)`,
				`DIR/` + countYAML + `:46: baseline step browser_navigate: no argument "href"; it takes url`,
				`DIR/` + countYAML + `:46: baseline step browser_navigate: argument "url" is required`,
			},
		},
		{
			name:  "a bad answer schema is reported once",
			edits: [][3]string{{osloYAML, "    high_c: {type: number}", "    high_c: {type: numbr}"}},
			want: []string{
				`DIR/` + osloYAML + `:10: answer schema: at '/properties/high_c/type': value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'`,
			},
		},
		{
			name: "load problems and a grade problem together",
			edits: [][3]string{
				{osloYAML, "entry_tool: list_cities", "entry_tool: list_towns"},
				{cheapestYAML, "class: pinned", "class: pinned\nsummary: cheap"},
				{cheapestYAML, `title: Paper Boats`, `title: Paper Planes`},
			},
			want: []string{
				`DIR/` + cheapestYAML + `:19: unknown field "summary"`,
				`DIR/` + cheapestYAML + `:40: baseline answer grades wrong: rule equals title (DIR/` + cheapestYAML + `:21): got "Paper Planes", want "Paper Boats"`,
				`DIR/` + osloYAML + `:8: entry_tool "list_towns" is not a tool of weather.example`,
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := clitest.BrokenCopy(t, tc.edits...)
			code, out, errOut := runCLI(t, "validate", dir)
			assert.Equal(t, exitFailure, code)
			want := strings.ReplaceAll(strings.Join(tc.want, "\n")+"\n", "DIR", dir)
			assert.Equal(t, want, out)
			count := fmt.Sprintf("%d problems", len(tc.want))
			if len(tc.want) == 1 {
				count = "1 problem"
			}
			assert.Equal(t, "pairbench: "+dir+": "+count+"\n", errOut)
		})
	}
}

func TestValidateStaleIsANote(t *testing.T) {
	dir := clitest.BrokenCopy(t, [3]string{osloYAML, "class: pinned", "class: pinned\nfixtures:\n  day: 2001-01-01"})
	var out, errOut bytes.Buffer
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	require.NoError(t, runValidate(t.Context(), dir, bench.ValidateOptions{Now: now}, &out, &errOut))
	assert.Equal(t, filepath.Join(dir, osloYAML)+":4: note: intent weather-high-oslo is stale and a run skips it: "+
		"fixture day is 2001-01-01, before today (2026-11-29); move it forward or use days_from_start\n", errOut.String())
	assert.Contains(t, out.String(), ": ok: ")
}

func TestValidateUsageAndErrors(t *testing.T) {
	code, _, errOut := runCLI(t, "validate", "a", "b")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `validate takes at most one DIR, got 2: ["a" "b"]`)

	missing := filepath.Join(t.TempDir(), "absent")
	code, out, errOut := runCLI(t, "validate", missing)
	assert.Equal(t, exitFailure, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "pairbench: validate: open registry:")

	code, _, _ = runCLI(t, "validate", "--help")
	assert.Equal(t, exitOK, code)
}

// TestValidateStopsOnTheFirstSIGTERM validates, with the real binary, a
// registry that takes a minute to check (tool files that run to their
// evaluation time limit) and sends one SIGTERM: validate stops at once with
// 143, as every command does on a first signal.
func TestValidateStopsOnTheFirstSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	dir := clitest.BrokenCopy(t)
	for i := range 30 {
		name := filepath.Join(dir, "domains/weather.example/tools", fmt.Sprintf("slow%02d.js", i))
		require.NoError(t, os.WriteFile(name, []byte("for (;;) {}\n({ execute() {} })\n"), 0o644))
	}
	bin := clitest.Build(t)
	cmd := exec.Command(bin, "validate", dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Signal it once it is checking: half a second of CPU, its own and its
	// tool-file evaluators', is far past its start-up (where the signal is
	// hooked) and inside the spinning files. A fixed sleep instead lost the
	// race on a busy machine.
	var evaluators []int
	for {
		evaluators = childPIDs(cmd.Process.Pid)
		ticks := cpuTicks(cmd.Process.Pid)
		for _, pid := range evaluators {
			ticks += cpuTicks(pid)
		}
		if ticks >= 50 {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("validate ended before it was signalled (%v): %s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	// It stops at once; the bound is only there to end the test if it
	// does not (it would spin for a minute), generous for a busy machine.
	select {
	case err := <-exited:
		code, _ := clitest.ExitStatus(err)
		assert.Equal(t, exitSIGTERM, code, "exit status: %s", out.String())
		assert.Contains(t, out.String(), "stopped by terminated")
		require.NotEmpty(t, evaluators)
		for _, pid := range evaluators {
			assert.Eventually(t, func() bool { return cpuTicks(pid) == 0 || processState(pid) == "Z" }, 10*time.Second, 20*time.Millisecond,
				"tool-file evaluator %d outlived validate", pid)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("validate still ran 30s after one SIGTERM: %s", out.String())
	}
}

// cpuTicks is the CPU time pid has used, user and system, in clock ticks
// (1/100 s); 0 once it is gone.
func cpuTicks(pid int) int {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // state, ppid, ...: utime and stime are the 12th and 13th
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return utime + stime
}

// childPIDs lists pid's child processes.
func childPIDs(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var pids []int
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, field := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(field); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

// processState is pid's state letter (R, S, Z...), "" once it is gone.
func processState(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// TestValidateSitePlaysTheBaselines plays the example registry's baseline
// against the example site (the scripted model in both arms, the real
// agent, browser and sandbox): it holds. Then a copy whose steps click an
// element the page does not have and whose tool_args name an author the
// site does not know passes the static validate, but not --site: each arm
// is a problem at its baseline's line.
func TestValidateSitePlaysTheBaselines(t *testing.T) {
	tools := clitest.RealStack(t)
	args := func(dir string) []string {
		return []string{"validate", dir, "--site", "--example-sites", "--intent", "books-cheapest-by-author", "--tools", tools}
	}
	code, out, errOut := runCLI(t, args(exampleRegistry)...)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "every baseline holds on the site")

	dir := clitest.BrokenCopy(t,
		[3]string{cheapestYAML, `args: {element: Author, text: "{{author}}", submit: true}`, `args: {element: Author, text: "Nobody Atall", submit: true}`},
		[3]string{cheapestYAML, "  tool_args:\n    author: \"{{author}}\"", "  tool_args:\n    author: Nobody Atall"},
	)
	code, _, errOut = runCLI(t, "validate", dir)
	require.Equal(t, exitOK, code, "the copy is valid on paper: %s", errOut)
	code, out, errOut = runCLI(t, args(dir)...)
	assert.Equal(t, exitFailure, code, errOut)
	assert.Contains(t, out, dir+"/"+cheapestYAML+":31: baseline steps against the site: the scripted control answer grades wrong")
	assert.Contains(t, out, dir+"/"+cheapestYAML+":39: baseline tool_args (entry_tool find_books) against the site: the scripted treatment answer grades wrong")
	assert.Contains(t, errOut, "2 problems against the site")
}

// TestValidateNotesADomainWithToolsAndNoIntents removes weather.example's
// intents: its tools would never be benched, which validate says in a note
// (the registry is still valid: the other domain runs).
func TestValidateNotesADomainWithToolsAndNoIntents(t *testing.T) {
	dir := clitest.BrokenCopy(t)
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "bench/intents/weather.example")))
	code, out, errOut := runCLI(t, "validate", dir)
	assert.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Equal(t, filepath.Join(dir, "domains/weather.example/domain.json")+
		": note: domain weather.example has 1 tool and no intents: a run benches none of its tools (intents are bench/intents/weather.example/<id>.yaml)\n", errOut)
}
