package intents

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents/config"
)

const exampleRegistry = "../examples/registry"

func TestLoadExampleRegistry(t *testing.T) {
	reg, err := Load(exampleRegistry)
	require.NoError(t, err)

	var names []string
	for _, d := range reg.Domains {
		names = append(names, d.Name)
	}
	assert.Equal(t, []string{"books.example", "weather.example"}, names)

	books := reg.Domain("books.example")
	require.NotNil(t, books)
	var registered []string
	for _, tool := range books.Registered() {
		registered = append(registered, tool.Name)
	}
	assert.Equal(t, []string{"find_books", "list_genre"}, registered, "add_to_cart is not read-only")
	require.NotNil(t, books.Tool("add_to_cart"))
	assert.False(t, books.Tool("add_to_cart").ReadOnly)
	assert.True(t, books.Tool("find_books").Matches("http://books.example/search?author=x"))
	assert.False(t, books.Tool("find_books").Matches("http://weather.example/"))
	assert.Equal(t, filepath.Join(exampleRegistry, "domains/books.example/tools/find_books.js")+":1", books.Tool("find_books").Pos.String())
	assert.Nil(t, reg.Domain("nope.example"))

	var ids []string
	for _, in := range reg.Intents {
		ids = append(ids, in.ID)
	}
	assert.Equal(t, []string{"books-cheapest-by-author", "books-cheapest-poetry", "books-count-by-author", "weather-high-oslo"}, ids)

	in := reg.Intent("books-cheapest-by-author")
	require.NotNil(t, in)
	file := filepath.Join(exampleRegistry, "bench/intents/books.example/books-cheapest-by-author.yaml")
	assert.Equal(t, file+":3", in.Pos.String())
	assert.Equal(t, "find_books", in.EntryTool)
	assert.Equal(t, pairbench.AnswerPinned, in.Class)
	assert.Equal(t, Fixture{Value: "Ada Quill"}, in.Fixtures["author"])
	require.Len(t, in.Rules, 2)
	assert.Equal(t, "equals", in.Rules[0].Kind)
	assert.Equal(t, "Paper Boats", in.Rules[0].Value)
	assert.True(t, in.Rules[0].Fold)
	assert.Equal(t, 20, in.Rules[0].Line)
	assert.Equal(t, 7.49, in.Rules[1].Value)
	require.Len(t, in.Baseline.Steps, 4)
	assert.Equal(t, "browser_type", in.Baseline.Steps[1].Tool)
	assert.Equal(t, map[string]any{"element": "Author", "text": "{{author}}", "submit": true}, in.Baseline.Steps[1].Args)
	assert.Equal(t, map[string]any{"title": "Paper Boats", "price": "$7.49"}, in.Baseline.Answer)

	weather := reg.Intent("weather-high-oslo")
	require.NotNil(t, weather)
	assert.True(t, weather.Placebo)
	assert.False(t, reg.Flawed(weather.File))
}

func TestLoadMissingDir(t *testing.T) {
	reg, err := Load(filepath.Join(t.TempDir(), "absent"))
	assert.Nil(t, reg)
	require.Error(t, err)
	var ps Problems
	assert.False(t, errors.As(err, &ps), "an unreadable root is not a list of problems")
}

// copyRegistry copies the example registry into a temporary directory and
// returns it.
func copyRegistry(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(exampleRegistry, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(exampleRegistry, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	require.NoError(t, err)
	return dst
}

// edit replaces old with new in the registry file rel (old must occur).
func edit(t *testing.T, dir, rel, old, new string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Contains(t, string(b), old, "%s must contain %q", rel, old)
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
}

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

// problemLines loads dir and returns its problems as "file:line: message"
// with file relative to dir.
func problemLines(t *testing.T, dir string) []string {
	t.Helper()
	reg, err := Load(dir)
	require.NotNil(t, reg)
	if err == nil {
		return nil
	}
	var ps Problems
	require.ErrorAs(t, err, &ps)
	out := make([]string, len(ps))
	for i, p := range ps {
		rel, relErr := filepath.Rel(dir, p.File)
		require.NoError(t, relErr)
		p.File = filepath.ToSlash(rel)
		out[i] = p.String()
	}
	return out
}

const (
	cheapest = "bench/intents/books.example/books-cheapest-by-author.yaml"
	count    = "bench/intents/books.example/books-count-by-author.yaml"
	oslo     = "bench/intents/weather.example/weather-high-oslo.yaml"
	booksDom = "domains/books.example/domain.json"
)

func TestLoadProblems(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(t *testing.T, dir string)
		want   []string
	}{
		{
			name:   "unknown field",
			mutate: func(t *testing.T, dir string) { edit(t, dir, cheapest, "class: pinned", "class: pinned\ncolour: blue") },
			want:   []string{cheapest + `:19: unknown field "colour"`},
		},
		{
			name: "unknown field in a nested mapping",
			mutate: func(t *testing.T, dir string) {
				edit(t, dir, cheapest, "    fold: true", "    fold: true\n    case: no")
			},
			want: []string{cheapest + `:24: unknown field "case" in rules[0]`},
		},
		{
			name: "intent in a sub-folder",
			mutate: func(t *testing.T, dir string) {
				b, err := os.ReadFile(filepath.Join(dir, oslo))
				require.NoError(t, err)
				write(t, dir, "bench/intents/weather.example/more/other.yaml", strings.Replace(string(b), "id: weather-high-oslo", "id: weather-other", 1))
			},
			want: []string{"bench/intents/weather.example/more:1: not read: intent files are bench/intents/<domain>/<id>.yaml, not in sub-folders"},
		},
		{
			name: "intent file ending in .YAML",
			mutate: func(t *testing.T, dir string) {
				require.NoError(t, os.Rename(filepath.Join(dir, oslo), filepath.Join(dir, "bench/intents/weather.example/weather-high-oslo.YAML")))
			},
			want: []string{"bench/intents/weather.example/weather-high-oslo.YAML:1: not read: an intent file's name ends in .yaml or .yml, in lower case"},
		},
		{
			name: "no intents at all",
			mutate: func(t *testing.T, dir string) {
				require.NoError(t, os.RemoveAll(filepath.Join(dir, "bench")))
			},
			want: []string{"bench/intents: the registry has no intents: a run would bench nothing (intents are bench/intents/<domain>/<id>.yaml)"},
		},
		{
			name:   "missing required field",
			mutate: func(t *testing.T, dir string) { edit(t, dir, oslo, "entry_tool: list_cities\n", "") },
			want:   []string{oslo + ":4: missing required field entry_tool"},
		},
		{
			name:   "wrong type",
			mutate: func(t *testing.T, dir string) { edit(t, dir, oslo, "placebo: true", "placebo: [yes]") },
			want:   []string{oslo + ":9: placebo: want true or false"},
		},
		{
			name: "duplicate id",
			mutate: func(t *testing.T, dir string) {
				b, err := os.ReadFile(filepath.Join(dir, oslo))
				require.NoError(t, err)
				write(t, dir, "bench/intents/weather.example/copy.yaml", string(b))
			},
			want: []string{`bench/intents/weather.example/weather-high-oslo.yaml:4: intent id "weather-high-oslo" is already used by ` + "DIR/bench/intents/weather.example/copy.yaml"},
		},
		{
			name:   "domain does not exist",
			mutate: func(t *testing.T, dir string) { edit(t, dir, oslo, "domain: weather.example", "domain: rain.example") },
			want: []string{
				oslo + `:5: domain is "rain.example" but the file is in the directory for "weather.example"`,
				oslo + `:5: domain "rain.example" does not exist (no domains/rain.example/domain.json)`,
			},
		},
		{
			name: "entry tool not read-only",
			mutate: func(t *testing.T, dir string) {
				edit(t, dir, cheapest, "entry_tool: find_books", "entry_tool: add_to_cart")
			},
			want: []string{
				cheapest + `:5: start_url http://books.example/ is not a page entry_tool add_to_cart appears on (urlPatterns http://books.example/book/*)`,
				cheapest + `:9: entry_tool "add_to_cart" is not registered: it is not read-only (readOnlyHint: true)`,
				cheapest + `:28: baseline.tool_args do not fit add_to_cart's inputSchema: at '': missing property 'id'`,
			},
		},
		{
			name: "entry tool missing",
			mutate: func(t *testing.T, dir string) {
				edit(t, dir, cheapest, "entry_tool: find_books", "entry_tool: find_book")
			},
			want: []string{cheapest + `:9: entry_tool "find_book" is not a tool of books.example`},
		},
		{
			name: "entry tool excluded",
			mutate: func(t *testing.T, dir string) {
				edit(t, dir, booksDom, `"start_urls"`, `"exclude": ["list_genre"],`+"\n  "+`"start_urls"`)
			},
			want: []string{"bench/intents/books.example/books-cheapest-poetry.yaml:10: entry_tool \"list_genre\" is not registered: books.example excludes it"},
		},
		{
			name: "entry tool needs sign-in",
			mutate: func(t *testing.T, dir string) {
				edit(t, dir, booksDom, `"start_urls"`, `"needs_sign_in": ["find_books"],`+"\n  "+`"start_urls"`)
			},
			want: []string{
				cheapest + `:9: entry_tool "find_books" is not registered: it needs sign-in and books.example has no profile`,
				count + `:8: entry_tool "find_books" is not registered: it needs sign-in and books.example has no profile`,
			},
		},
		{
			name: "domain names unknown tools",
			mutate: func(t *testing.T, dir string) {
				edit(t, dir, booksDom, `"start_urls"`, `"exclude": ["nope"],`+"\n  "+`"signed_in_check": "also_nope",`+"\n  "+`"start_urls"`)
			},
			want: []string{
				booksDom + `:2: exclude names tool "nope", which books.example does not define`,
				booksDom + `:3: signed_in_check names tool "also_nope", which books.example does not define`,
				booksDom + `:3: signed_in_check needs a profile to sign in with`,
			},
		},
		{
			name:   "domain unknown field",
			mutate: func(t *testing.T, dir string) { edit(t, dir, booksDom, `"cart_step"`, `"cart_stp"`) },
			want:   []string{booksDom + `:3: unknown field "cart_stp"`},
		},
		{
			name:   "domain JSON syntax",
			mutate: func(t *testing.T, dir string) { edit(t, dir, booksDom, `"cart_step":`, `"cart_step"`) },
			want:   []string{booksDom + `:3: JSON: expected colon after object key`},
		},
		{
			name: "missing domain.json",
			mutate: func(t *testing.T, dir string) {
				require.NoError(t, os.Remove(filepath.Join(dir, "domains/weather.example/domain.json")))
			},
			want: []string{"domains/weather.example: missing domain.json"},
		},
		{
			name: "answer schema invalid",
			mutate: func(t *testing.T, dir string) {
				edit(t, dir, oslo, "    high_c: {type: number}", "    high_c: {type: numbr}")
			},
			want: []string{oslo + `:10: answer schema: at '/properties/high_c/type': value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'`},
		},
		{
			name: "class and agreement",
			mutate: func(t *testing.T, dir string) {
				edit(t, dir, oslo, "class: pinned", "class: agreement\nagreement: {kind: closest}")
			},
			want: []string{
				oslo + `:17: agreement kind "closest": want "same" or "cheapest"`,
			},
		},
		{
			name:   "class invalid",
			mutate: func(t *testing.T, dir string) { edit(t, dir, oslo, "class: pinned", "class: loose") },
			want:   []string{oslo + `:16: class "loose": want "pinned", "agreement", "shape only" or "judged"`},
		},
		{
			name: "undefined placeholder",
			mutate: func(t *testing.T, dir string) {
				edit(t, dir, oslo, "in Oslo,", "in {{city}}, on {{ day }} {{bad name}},")
			},
			want: []string{
				oslo + `:7: prompt: malformed placeholder {{bad name}} (want {{name}})`,
				oslo + `:7: prompt: {{city}} names no fixture`,
				oslo + `:7: prompt: {{day}} names no fixture`,
			},
		},
		{
			name: "bad fixtures",
			mutate: func(t *testing.T, dir string) {
				edit(t, dir, cheapest, "  author: Ada Quill", "  author: Ada Quill\n  day: {days_from_start: -1}\n  when: {days: 2}")
			},
			want: []string{
				cheapest + `:12: fixtures.day.days_from_start: want 0 or more days, got -1`,
				cheapest + `:13: fixtures.when: unknown fixture field "days" (want value or days_from_start)`,
				cheapest + `:13: fixtures.when: a fixture is a literal, {value: ...} or {days_from_start: n}`,
			},
		},
		{
			name: "tool args do not fit the schema",
			mutate: func(t *testing.T, dir string) {
				edit(t, dir, cheapest, `    author: "{{author}}"`, `    writer: "{{author}}"`)
			},
			want: []string{cheapest + `:28: baseline.tool_args do not fit find_books's inputSchema: at '': missing property 'author'`},
		},
		{
			name: "baseline step not a browser tool",
			mutate: func(t *testing.T, dir string) {
				edit(t, dir, oslo, "    - tool: browser_snapshot", "    - tool: snapshot")
			},
			want: []string{oslo + `:30: baseline.steps[0]: tool "snapshot" is not a browser tool (want a Playwright MCP name like browser_click)`},
		},
		{
			name:   "YAML syntax",
			mutate: func(t *testing.T, dir string) { edit(t, dir, oslo, "class: pinned", "class: [pinned") },
			want:   []string{oslo + `:16: YAML: did not find expected ',' or ']'`},
		},
		{
			name: "tool syntax error",
			mutate: func(t *testing.T, dir string) {
				edit(t, dir, "domains/weather.example/tools/list_cities.js", "title:", "title")
			},
			want: []string{
				oslo + `:8: entry_tool "list_cities" is not a tool of weather.example`,
				"domains/weather.example/tools/list_cities.js:11: syntax error: Unexpected string",
			},
		},
		{
			name: "tool that loops",
			mutate: func(t *testing.T, dir string) {
				write(t, dir, "domains/weather.example/tools/spin.js", "for (;;) {}\n({ execute() {} })\n")
			},
			want: []string{"domains/weather.example/tools/spin.js:1: tool file stopped: it ran past its time limit"},
		},
		{
			name: "start URL off the tool's pages",
			mutate: func(t *testing.T, dir string) {
				edit(t, dir, oslo, "start_url: http://weather.example/", "start_url: http://books.example/")
			},
			want: []string{
				oslo + `:6: start_url http://books.example/ matches none of weather.example's start_urls`,
				oslo + `:6: start_url http://books.example/ is not a page entry_tool list_cities appears on (urlPatterns http://weather.example/*)`,
			},
		},
		{
			name:   "stray intent file",
			mutate: func(t *testing.T, dir string) { write(t, dir, "bench/intents/loose.yaml", "id: x\n") },
			want:   []string{"bench/intents/loose.yaml:1: intent files belong in bench/intents/<domain>/"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyRegistry(t)
			tc.mutate(t, dir)
			got := problemLines(t, dir)
			for i := range got {
				got[i] = strings.ReplaceAll(got[i], dir, "DIR")
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestLoadRefusesSymlinkOutside(t *testing.T) {
	dir := copyRegistry(t)
	secret := filepath.Join(t.TempDir(), "secret.js")
	require.NoError(t, os.WriteFile(secret, []byte(`({ name: "stolen", description: "x", urlPatterns: ["http://a/*"], execute() {} })`), 0o644))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "domains/weather.example/tools/link.js")))
	got := problemLines(t, dir)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "domains/weather.example/tools/link.js:1: cannot read tool file:")
	reg, _ := Load(dir)
	assert.Nil(t, reg.Domain("weather.example").Tool("stolen"))
}

func TestLoadConfig(t *testing.T) {
	dir := copyRegistry(t)
	require.NoError(t, os.Rename(filepath.Join(dir, "domains"), filepath.Join(dir, "sites")))
	require.NoError(t, os.Rename(filepath.Join(dir, "bench"), filepath.Join(dir, "checks")))
	write(t, dir, config.File, `paths:
  domains: sites
  intents: checks/intents
domains:
  books.example:
    - "web/books/**"
`)
	reg, err := Load(dir)
	require.NoError(t, err)
	assert.Equal(t, config.Paths{Domains: "sites", Tools: "tools/*.js", Intents: "checks/intents"}, reg.Config.Paths)
	assert.Len(t, reg.Intents, 4)

	assert.Equal(t, []string{"books.example"}, reg.DomainsFor([]string{"web/books/index.html"}))
	assert.Equal(t, []string{"weather.example"}, reg.DomainsFor([]string{"sites/weather.example/tools/list_cities.js"}))
	assert.Equal(t, []string{"books.example", "weather.example"}, reg.DomainsFor([]string{
		"checks/intents/books.example/x.yaml", "checks/intents/weather.example/y.yaml",
	}))
	assert.Empty(t, reg.DomainsFor([]string{"README.md", "sites/weather.example.md"}))
}

func TestLoadConfigProblems(t *testing.T) {
	dir := copyRegistry(t)
	write(t, dir, config.File, `paths:
  domains: ../elsewhere
  tools: "[bad"
  intent: x
domains:
  nowhere.example: ["a/**"]
`)
	got := problemLines(t, dir)
	assert.Equal(t, []string{
		`.pairbench.yml:2: paths.domains: "../elsewhere" must be a relative path inside the registry`,
		`.pairbench.yml:3: paths.tools: "[bad" is not a valid glob`,
		`.pairbench.yml:4: unknown field "intent" in paths`,
		`.pairbench.yml:6: domains: "nowhere.example" is not a domain in domains`,
	}, got)
}

func BenchmarkLoadExampleRegistry(b *testing.B) {
	for b.Loop() {
		if _, err := Load(exampleRegistry); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLoadFSReadsAnyTree loads the example registry from a tree in memory,
// as a commit read from git is: the same registry as from its directory,
// with positions named by the name given.
func TestLoadFSReadsAnyTree(t *testing.T) {
	mem := fstest.MapFS{}
	require.NoError(t, fs.WalkDir(os.DirFS(exampleRegistry), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(filepath.Join(exampleRegistry, p))
		mem["reg/"+p] = &fstest.MapFile{Data: data, Mode: 0o644}
		return err
	}))
	sub, err := fs.Sub(mem, "reg")
	require.NoError(t, err)

	fromDir, err := Load(exampleRegistry)
	require.NoError(t, err)
	fromTree, err := LoadFS(sub, "reg")
	require.NoError(t, err)
	assert.Equal(t, "reg", fromTree.Root)
	require.Len(t, fromTree.Intents, len(fromDir.Intents))
	for i, in := range fromTree.Intents {
		want := fromDir.Intents[i]
		assert.Equal(t, want.ID, in.ID)
		assert.Equal(t, want.Prompt, in.Prompt)
		rel, err := filepath.Rel(exampleRegistry, want.File)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join("reg", rel), in.File, "positions are named from the tree's name")
	}
	require.Len(t, fromTree.Domains, len(fromDir.Domains))
	for i, d := range fromTree.Domains {
		assert.Equal(t, len(fromDir.Domains[i].Tools), len(d.Tools), "domain %s", d.Name)
	}

	// Something in a file's place that is not a regular file is a problem,
	// named like every other.
	mem["reg/bench/intents/books.example/odd.yaml"] = &fstest.MapFile{Mode: fs.ModeDevice}
	_, err = LoadFS(sub, "reg")
	var ps Problems
	require.ErrorAs(t, err, &ps)
	require.Len(t, ps, 1)
	assert.Equal(t, filepath.Join("reg", "bench/intents/books.example/odd.yaml")+":1: cannot read: not a regular file", ps[0].String())
}

// TestParseConfigIsLoadsParser reads .pairbench.yml as the bot does: the
// problems Load would report, and defaults in place of what is wrong.
func TestParseConfigIsLoadsParser(t *testing.T) {
	cfg, err := config.Parse(".pairbench.yml", []byte("paths:\n  intents: ../elsewhere\n  domains: sites\nschedule: nightly\n"))
	var ps Problems
	require.ErrorAs(t, err, &ps)
	assert.Equal(t, []string{
		`.pairbench.yml:2: paths.intents: "../elsewhere" must be a relative path inside the registry`,
		`.pairbench.yml:4: unknown field "schedule"`,
	}, strings.Split(ps.Error(), "\n"))
	assert.Equal(t, config.Paths{Domains: "sites", Tools: config.DefaultPaths.Tools, Intents: config.DefaultPaths.Intents}, cfg.Paths)

	cfg, err = config.Parse(".pairbench.yml", []byte("paths: [\n"))
	require.ErrorAs(t, err, &ps)
	assert.Equal(t, config.DefaultPaths, cfg.Paths, "bad YAML: every default")

	cfg, err = config.Parse(".pairbench.yml", []byte("domains:\n  books.example: [\"shared/*.js\"]\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"shared/*.js"}, cfg.Domains["books.example"])
	assert.True(t, config.ValidDomainName("books.example"))
	assert.False(t, config.ValidDomainName("Books.Example"))
	assert.False(t, config.ValidDomainName("x$(id)"))
}

// TestLoadRefusesAFIFOWithoutOpeningIt puts named pipes where a tool file
// and an intent file belong: opening one would wait for a writer for ever,
// so Load must refuse each, by file, without opening it.
func TestLoadRefusesAFIFOWithoutOpeningIt(t *testing.T) {
	dir := copyRegistry(t)
	for _, rel := range []string{"domains/weather.example/tools/pipe.js", "bench/intents/weather.example/pipe.yaml"} {
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, rel), 0o644), rel)
	}
	done := make(chan []string, 1)
	go func() { done <- problemLines(t, dir) }()
	select {
	case got := <-done:
		assert.Equal(t, []string{
			"bench/intents/weather.example/pipe.yaml:1: cannot read: not a regular file",
			"domains/weather.example/tools/pipe.js:1: cannot read tool file: not a regular file",
		}, got)
	case <-time.After(20 * time.Second):
		// Open the pipes for writing, so the blocked reader returns and the
		// test can end.
		for _, rel := range []string{"domains/weather.example/tools/pipe.js", "bench/intents/weather.example/pipe.yaml"} {
			if f, err := os.OpenFile(filepath.Join(dir, rel), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
		t.Fatal("Load still runs after 20s: it opened a FIFO")
	}
}

// TestIntentID: config.IntentID, which the bot reads a pull request's
// intent files with, reads an intent file's id as Load's decoder does:
// through problems elsewhere in the file, and not from a file that is no
// mapping or has no id; and it agrees with the loader on every intent of the
// example registry.
func TestIntentID(t *testing.T) {
	loaderID := func(name string, data []byte) string {
		var ps Problems
		if in, _ := decodeIntent(name, data, &ps); in != nil {
			return in.ID
		}
		return ""
	}
	for data, want := range map[string]string{
		"id: books-cheapest\ndomain: books.example\n":                 "books-cheapest",
		"colour: blue\nid: books-cheapest\npairs: [not, a, number]\n": "books-cheapest",
		"domain: books.example\n":                                     "",
		"- id: books-cheapest\n":                                      "",
		"id: [books-cheapest\n":                                       "",
		"id: &a books-cheapest\nagain: *a\n":                          "books-cheapest",
		"":                                                            "",
	} {
		assert.Equal(t, want, config.IntentID("a.yaml", []byte(data)), "%q", data)
		assert.Equal(t, want, loaderID("a.yaml", []byte(data)), "%q", data)
	}
	reg, err := Load(exampleRegistry)
	require.NoError(t, err)
	require.NotEmpty(t, reg.Intents)
	for _, in := range reg.Intents {
		data, err := os.ReadFile(filepath.Join(filepath.Dir(exampleRegistry), in.File))
		require.NoError(t, err)
		assert.Equal(t, in.ID, config.IntentID(in.File, data), in.File)
	}
}

// TestAnEmptyConfigTakesEveryDefault: .pairbench.yml may be empty, or hold
// comments alone (docs/github-app.md says so); the registry then has every
// default path, with no problem. It used to fail with "empty file".
func TestAnEmptyConfigTakesEveryDefault(t *testing.T) {
	for _, file := range []string{"", "\n", "# pairbench reads this registry\n", "---\n"} {
		c, err := config.Parse(config.File, []byte(file))
		require.NoError(t, err, "%q", file)
		assert.Equal(t, config.DefaultPaths, c.Paths)

		mem := fstest.MapFS{}
		require.NoError(t, fs.WalkDir(os.DirFS(exampleRegistry), ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(filepath.Join(exampleRegistry, p))
			mem[p] = &fstest.MapFile{Data: data, Mode: 0o644}
			return err
		}))
		mem[config.File] = &fstest.MapFile{Data: []byte(file), Mode: 0o644}
		reg, err := LoadFS(mem, "reg")
		require.NoError(t, err, "%q", file)
		assert.NotEmpty(t, reg.Intents)
	}
}

// TestLoadNamesASymlinkLoop puts symbolic links that point at themselves
// where a domain directory and an intents directory belong: each is
// reported as the loop it is, by path, not as a missing directory or file.
func TestLoadNamesASymlinkLoop(t *testing.T) {
	dir := copyRegistry(t)
	require.NoError(t, os.Symlink("loop.example", filepath.Join(dir, "domains/loop.example")))
	require.NoError(t, os.Symlink("loop.example", filepath.Join(dir, "bench/intents/loop.example")))
	require.NoError(t, os.Symlink("loop.js", filepath.Join(dir, "domains/weather.example/tools/loop.js")))
	// A whole tools directory that loops: its tools are not merely absent.
	books := filepath.Join(dir, "domains/books.example/tools")
	require.NoError(t, os.RemoveAll(books))
	require.NoError(t, os.Symlink("tools", books))
	got := problemLines(t, dir)
	assert.Equal(t, []string{
		`bench/intents/books.example/books-cheapest-by-author.yaml:9: entry_tool "find_books" is not a tool of books.example`,
		`bench/intents/books.example/books-cheapest-poetry.yaml:10: entry_tool "list_genre" is not a tool of books.example`,
		`bench/intents/books.example/books-count-by-author.yaml:8: entry_tool "find_books" is not a tool of books.example`,
		"bench/intents/loop.example: cannot read: a symbolic link loop (ELOOP)",
		"domains/books.example/tools: cannot read the tool files' directory: a symbolic link loop (ELOOP)",
		"domains/loop.example: cannot read: a symbolic link loop (ELOOP)",
		"domains/weather.example/tools/loop.js:1: cannot read tool file: a symbolic link loop (ELOOP)",
	}, got)
}
