package intents

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"

	"github.com/pairbench/pairbench/intents/config"
	"gopkg.in/yaml.v3"
)

// Size limits on the files a registry holds; they come from pull requests.
const (
	maxDomainFile = 1 << 20
	maxIntentFile = 1 << 20
	maxConfigFile = 1 << 20
)

// Registry is a loaded registry: its configuration, its domains with their
// tools, and its intents.
type Registry struct {
	// Root is the registry's name as given to Load or LoadFS; every
	// Pos.File starts with it.
	Root   string
	Config config.Config
	// Domains are sorted by name.
	Domains []*Domain
	// Intents are sorted by ID.
	Intents []*Intent

	// flawed holds the files that have problems, so callers can tell a
	// clean intent from one that loaded partly.
	flawed map[string]bool
}

// Domain returns the domain named name, or nil.
func (r *Registry) Domain(name string) *Domain {
	i, ok := slices.BinarySearchFunc(r.Domains, name, func(d *Domain, n string) int { return strings.Compare(d.Name, n) })
	if !ok {
		return nil
	}
	return r.Domains[i]
}

// Intent returns the intent with id, or nil.
func (r *Registry) Intent(id string) *Intent {
	for _, in := range r.Intents {
		if in.ID == id {
			return in
		}
	}
	return nil
}

// Untested returns the domains that have tools and no intent: a run
// benches none of their tools. It is not a problem (the other domains run,
// and tools may land before their intents); validate notes each.
func (r *Registry) Untested() []*Domain {
	var out []*Domain
	for _, d := range r.Domains {
		if len(d.Tools) > 0 && !slices.ContainsFunc(r.Intents, func(in *Intent) bool { return in.Domain == d.Name }) {
			out = append(out, d)
		}
	}
	return out
}

// Flawed reports whether Load found a problem in file (a Pos.File).
func (r *Registry) Flawed(file string) bool { return r.flawed[file] }

// Tool returns the domain's tool named name, or nil.
func (d *Domain) Tool(name string) *Tool {
	for i := range d.Tools {
		if d.Tools[i].Name == name {
			return &d.Tools[i]
		}
	}
	return nil
}

// SignsIn reports whether trials on the domain use a signed-in profile.
func (d *Domain) SignsIn() bool { return d.Profile != "" }

// Registered returns the tools registered in treatment, in file order:
// those with readOnlyHint true, minus Exclude and, unless the domain signs
// in, minus NeedsSignIn.
func (d *Domain) Registered() []Tool {
	var out []Tool
	for _, t := range d.Tools {
		if d.registers(t) {
			out = append(out, t)
		}
	}
	return out
}

func (d *Domain) registers(t Tool) bool {
	return t.ReadOnly && !slices.Contains(d.Exclude, t.Name) &&
		(d.SignsIn() || !slices.Contains(d.NeedsSignIn, t.Name))
}

// Matches reports whether the tool appears on rawURL: whether it matches one
// of the tool's URL patterns. A pattern that does not parse matches nothing.
func (t *Tool) Matches(rawURL string) bool {
	for _, s := range t.URLPatterns {
		if p, err := ParseURLPattern(s); err == nil && p.Match(rawURL) {
			return true
		}
	}
	return false
}

// Load reads and validates the registry in dir, as LoadFS does. Files are
// read through an os.Root, so no path or symlink reaches outside dir. It
// returns an error without a registry only when dir cannot be opened;
// otherwise it returns what LoadFS returns.
func Load(dir string) (*Registry, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open registry: %w", err)
	}
	defer root.Close()
	return LoadFS(root.FS(), dir)
}

// LoadFS reads and validates the registry at the root of fsys, which may be
// a directory (os.DirFS, an os.Root) or any other tree, such as a commit
// read straight from git. name is how positions name the registry: every
// Pos.File is name joined with the file's path in fsys. Only regular files
// are read: anything else where a file belongs is a problem.
//
// LoadFS returns the registry with everything that could be read and, when
// anything is wrong, a Problems error listing every problem by file and
// line, sorted; err is then that Problems.
func LoadFS(fsys fs.FS, name string) (*Registry, error) {
	return loadFS(fsys, name, evalTools, startAhead)
}

// toolEvaluation evaluates tool files: evalTools, or in a benchmark the
// in-process evaluation it replaced.
type toolEvaluation func(srcs []string, lim ToolLimits, ahead <-chan startedEvaluator) []evalResult

// loadFS is LoadFS with the tool files evaluated by eval, and an
// evaluator started by ahead (when not nil) as the load begins.
func loadFS(fsys fs.FS, name string, eval toolEvaluation, ahead func(ToolLimits) <-chan startedEvaluator) (*Registry, error) {
	l := &loader{
		name:    name,
		fsys:    fsys,
		reg:     &Registry{Root: name, flawed: map[string]bool{}},
		domains: map[string]*loadedDomain{},
		eval:    eval,
		ahead:   ahead,
	}
	l.load()
	l.ps.Sort()
	for _, p := range l.ps {
		l.reg.flawed[p.File] = true
	}
	if len(l.ps) > 0 {
		return l.reg, l.ps
	}
	return l.reg, nil
}

// loader holds what Load needs between its steps.
type loader struct {
	name    string // the registry's name in positions
	fsys    fs.FS
	reg     *Registry
	ps      Problems
	domains map[string]*loadedDomain
	intents []*loadedIntent
	// configLines is the line of each key in .pairbench.yml.
	configLines map[string]int
	// tools are the tool files read, in order, for eval.
	tools []toolFile
	eval  toolEvaluation
	ahead func(ToolLimits) <-chan startedEvaluator
	// evaluator is started as the load begins (by ahead), for eval.
	evaluator <-chan startedEvaluator
}

// toolFile is a tool file read, to be evaluated.
type toolFile struct {
	domain *Domain
	rel    string
	src    string
}

type loadedDomain struct {
	*Domain
	lines map[string]int // field → line in domain.json
}

type loadedIntent struct {
	*Intent
	dirDomain string // the directory the file is in
	dec       *config.Decoder
}

// file turns a slash path inside the registry into the Pos.File users see.
func (l *loader) file(rel string) string { return filepath.Join(l.name, filepath.FromSlash(rel)) }

// read reads a registry file of at most limit bytes. What is not a regular
// file is refused before it is opened: opening a FIFO would wait for a
// writer for ever.
func (l *loader) read(rel string, limit int64) ([]byte, error) {
	st, err := fs.Stat(l.fsys, rel)
	if err != nil {
		return nil, symlinkLoop(err)
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	f, err := l.fsys.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%d bytes; the limit is %d", st.Size(), limit)
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// isDir says whether the directory entry e at rel is a directory, following
// a symbolic link (a loop, or a link out of the registry, is an error that
// names rel and the cause).
func (l *loader) isDir(rel string, e fs.DirEntry) (bool, error) {
	if e.Type()&fs.ModeSymlink == 0 {
		return e.IsDir(), nil
	}
	st, err := fs.Stat(l.fsys, rel)
	if err != nil {
		return false, symlinkLoop(err)
	}
	return st.IsDir(), nil
}

// hasMeta reports whether a path holds a glob's special characters.
func hasMeta(p string) bool { return strings.ContainsAny(p, `*?[\`) }

// errSymlinkLoop is what reading a path that is a symbolic link loop says
// (the problem's position names the path).
var errSymlinkLoop = errors.New("a symbolic link loop (ELOOP)")

// symlinkLoop returns errSymlinkLoop for an ELOOP error, else err.
func symlinkLoop(err error) error {
	if errors.Is(err, syscall.ELOOP) {
		return errSymlinkLoop
	}
	return err
}

func (l *loader) load() {
	if l.ahead != nil {
		l.evaluator = l.ahead(ToolLimits{})
	}
	l.loadConfig()
	l.loadDomains()
	tools := l.evalTools()
	l.loadIntents()
	tools()
	l.checkConfigDomains()
	for _, d := range l.reg.Domains {
		l.checkDomain(l.domains[d.Name])
	}
	l.checkIntents()
}

func (l *loader) loadConfig() {
	l.reg.Config = config.Config{Paths: config.DefaultPaths}
	data, err := l.read(config.File, maxConfigFile)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		l.ps.Add(Pos{File: l.file(config.File)}, "cannot read: %v", err)
		return
	}
	l.reg.Config, l.configLines = config.Read(l.file(config.File), data, &l.ps)
}

func (l *loader) loadDomains() {
	dir := l.reg.Config.Paths.Domains
	entries, err := fs.ReadDir(l.fsys, dir)
	if err != nil {
		l.ps.Add(Pos{File: l.file(dir)}, "cannot read the domains directory: %v", err)
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		rel := path.Join(dir, e.Name())
		isDir, err := l.isDir(rel, e)
		if err != nil {
			l.ps.Add(Pos{File: l.file(rel)}, "cannot read: %v", err)
			continue
		}
		if !isDir {
			l.ps.Add(Pos{File: l.file(rel)}, "not a domain directory; %s holds one directory per domain", dir)
			continue
		}
		if !config.ValidDomainName(e.Name()) {
			l.ps.Add(Pos{File: l.file(rel)}, "domain directory %q is not a lower-case host name", e.Name())
			continue
		}
		l.loadDomain(e.Name(), rel)
	}
}

func (l *loader) loadDomain(name, rel string) {
	file := path.Join(rel, "domain.json")
	data, err := l.read(file, maxDomainFile)
	d := &loadedDomain{Domain: &Domain{Pos: Pos{File: l.file(file)}}, lines: map[string]int{}}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			l.ps.Add(Pos{File: l.file(rel)}, "missing domain.json")
		} else {
			l.ps.Add(Pos{File: l.file(file)}, "cannot read: %v", err)
		}
	} else {
		d.Domain, d.lines = decodeDomain(l.file(file), data, &l.ps)
	}
	d.Name = name
	l.loadContext(d.Domain, rel, d.lines["context"])

	pattern := path.Join(rel, l.reg.Config.Paths.Tools)
	toolFiles, err := fs.Glob(l.fsys, pattern)
	if err != nil {
		l.ps.Add(Pos{File: l.file(rel)}, "tool glob: %v", err)
	}
	// Glob skips a directory it cannot read as if it held nothing: name it.
	if dir := path.Dir(pattern); dir != rel && !hasMeta(dir) {
		if _, err := fs.Stat(l.fsys, dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.ps.Add(Pos{File: l.file(dir)}, "cannot read the tool files' directory: %v", symlinkLoop(err))
		}
	}
	for _, tf := range toolFiles {
		l.readTool(d.Domain, tf)
	}
	l.domains[name] = d
	l.reg.Domains = append(l.reg.Domains, d.Domain) // ReadDir sorts by name
}

// maxContextFile bounds a context pack: it is sent to the model with every
// trial of an arm with context.
const maxContextFile = 256 << 10

// loadContext reads the context pack d names, a file inside the domain's
// directory rel; line is the line of domain.json's "context" field.
func (l *loader) loadContext(d *Domain, rel string, line int) {
	if d.Context == "" {
		return
	}
	at := Pos{File: d.File, Line: line}
	if !config.LocalPath(d.Context) {
		l.ps.Add(at, "context: %q must be a relative path inside the domain's directory", d.Context)
		return
	}
	d.ContextFile = path.Join(rel, d.Context)
	data, err := l.read(d.ContextFile, maxContextFile)
	if err != nil {
		l.ps.Add(at, "context: %v", err)
		return
	}
	d.ContextText = string(data)
}

// readTool reads a tool file, for evalTools.
func (l *loader) readTool(d *Domain, rel string) {
	data, err := l.read(rel, DefaultToolSource)
	if err != nil {
		l.ps.Add(Pos{File: l.file(rel), Line: 1}, "cannot read tool file: %v", err)
		return
	}
	l.tools = append(l.tools, toolFile{domain: d, rel: rel, src: string(data)})
}

// evalTools starts evaluating the tool files read, all at once (in
// evaluator processes, the first started as the load began: see
// evaluator.go), while the loader goes on. The
// function it returns waits for them and adds each tool to its domain, in
// file order, or its problem at the line it names.
func (l *loader) evalTools() (wait func()) {
	srcs := make([]string, len(l.tools))
	for i, tf := range l.tools {
		srcs[i] = tf.src
	}
	done := make(chan []evalResult, 1)
	go func() { done <- l.eval(srcs, ToolLimits{}, l.evaluator) }()
	return func() {
		for i, r := range <-done {
			tf := l.tools[i]
			at := Pos{File: l.file(tf.rel), Line: 1}
			if r.err != nil {
				var te *ToolError
				if errors.As(r.err, &te) && te.Line > 0 {
					at.Line = te.Line
				}
				l.ps.Add(at, "%v", r.err)
				continue
			}
			r.tool.Pos, r.tool.Path = at, tf.rel
			tf.domain.Tools = append(tf.domain.Tools, r.tool)
		}
	}
}

func (l *loader) loadIntents() {
	dir := l.reg.Config.Paths.Intents
	defer func() {
		if len(l.reg.Intents) == 0 && len(l.ps) == 0 {
			l.ps.Add(Pos{File: l.file(dir)}, "the registry has no intents: a run would bench nothing (intents are %s/<domain>/<id>.yaml)", dir)
		}
	}()
	entries, err := fs.ReadDir(l.fsys, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		l.ps.Add(Pos{File: l.file(dir)}, "cannot read the intents directory: %v", err)
		return
	}
	for _, e := range entries {
		rel := path.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		isDir, err := l.isDir(rel, e)
		if err != nil {
			l.ps.Add(Pos{File: l.file(rel)}, "cannot read: %v", err)
			continue
		}
		if !isDir {
			l.ps.Add(Pos{File: l.file(rel), Line: 1}, "intent files belong in %s/<domain>/", dir)
			continue
		}
		files, err := fs.ReadDir(l.fsys, rel)
		if err != nil {
			l.ps.Add(Pos{File: l.file(rel)}, "cannot read: %v", err)
			continue
		}
		for _, f := range files {
			name, ext := f.Name(), path.Ext(f.Name())
			at := Pos{File: l.file(path.Join(rel, name)), Line: 1}
			switch {
			case strings.HasPrefix(name, "."):
			case f.IsDir():
				l.ps.Add(at, "not read: intent files are %s/<domain>/<id>.yaml, not in sub-folders", dir)
			case ext == ".yaml" || ext == ".yml":
				l.loadIntent(e.Name(), path.Join(rel, name))
			case strings.EqualFold(ext, ".yaml") || strings.EqualFold(ext, ".yml"):
				l.ps.Add(at, "not read: an intent file's name ends in .yaml or .yml, in lower case")
			}
		}
	}
	slices.SortFunc(l.reg.Intents, func(a, b *Intent) int {
		return strings.Compare(a.ID+"\x00"+a.File, b.ID+"\x00"+b.File)
	})
}

func (l *loader) loadIntent(dirDomain, rel string) {
	file := l.file(rel)
	data, err := l.read(rel, maxIntentFile)
	if err != nil {
		l.ps.Add(Pos{File: file, Line: 1}, "cannot read: %v", err)
		return
	}
	in, dec := decodeIntent(file, data, &l.ps)
	if in == nil {
		return
	}
	l.intents = append(l.intents, &loadedIntent{Intent: in, dirDomain: dirDomain, dec: dec})
	l.reg.Intents = append(l.reg.Intents, in)
}

// decodeIntent parses one intent file. It returns nil when the file is not
// a YAML mapping at all.
func decodeIntent(file string, data []byte, ps *Problems) (*Intent, *config.Decoder) {
	n := config.ParseDocument(file, data, ps)
	if n == nil {
		return nil, nil
	}
	in := &Intent{}
	dec := config.NewDecoder(file, ps)
	dec.Custom = map[reflect.Type]func(*config.Decoder, *yaml.Node, reflect.Value, string){fixtureType: decodeFixture}
	dec.Decode(n, reflect.ValueOf(in).Elem(), "")
	if n.Kind != yaml.MappingNode {
		return nil, nil
	}
	if line, ok := dec.Lines["baseline.answer"]; ok {
		in.Baseline.Line = line
	}
	return in, dec
}
