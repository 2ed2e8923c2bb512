package intents

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// ToolLimits bound the evaluation of one untrusted tool file. Zero fields take
// the Default* values.
type ToolLimits struct {
	// Source is the largest tool file read, in bytes.
	Source int
	// Time bounds the script and the reading of its metadata; the
	// interpreter is interrupted when it passes.
	Time time.Duration
	// Grace is how long after Time the evaluation may still run before it is
	// abandoned (a built-in that ignores the interrupt is still running).
	Grace time.Duration
	// HeapGrowth is how far the Go heap may grow while the file runs before
	// it is interrupted.
	HeapGrowth uint64
	// CPU is the CPU time the evaluator may use on one file before it is
	// killed (rounded up to whole seconds); it defaults to Time+Grace.
	CPU time.Duration
	// Memory is how far the evaluator's address space may grow past what
	// it maps as it starts; an allocation beyond it kills the evaluator.
	Memory uint64
}

// The limits Load applies to every tool file, and that zero ToolLimits
// fields take.
const (
	DefaultToolSource     = 256 << 10
	DefaultToolTime       = 2 * time.Second
	DefaultToolGrace      = 2 * time.Second
	DefaultToolHeapGrowth = 64 << 20
	DefaultToolMemory     = 512 << 20
)

func (l ToolLimits) withDefaults() ToolLimits {
	if l.Source <= 0 {
		l.Source = DefaultToolSource
	}
	if l.Time <= 0 {
		l.Time = DefaultToolTime
	}
	if l.Grace <= 0 {
		l.Grace = DefaultToolGrace
	}
	if l.HeapGrowth == 0 {
		l.HeapGrowth = DefaultToolHeapGrowth
	}
	if l.CPU <= 0 {
		l.CPU = l.Time + l.Grace
	}
	if l.Memory == 0 {
		l.Memory = DefaultToolMemory
	}
	return l
}

// Limits on the metadata read back out of a tool file.
const (
	maxMetaString = 64 << 10 // characters in one string
	maxMetaItems  = 1000     // items in one array or keys in one object
	maxMetaNodes  = 20000    // values in the whole metadata
	maxMetaDepth  = 32
)

// ToolError is why a tool file's metadata could not be read. Line is the
// line in the tool file it points at, 0 when unknown.
type ToolError struct {
	Line int
	Msg  string
	// abandoned says a built-in still runs in the runtime that gave up.
	abandoned bool
	// property is the tool's top-level property the error is about, if
	// any: evalToolHere sets Line to the line it is written on.
	property string
}

func (e *ToolError) Error() string { return e.Msg }

// errTimeLimit and errHeapLimit are the interrupt values EvalTool uses.
var (
	errTimeLimit = errors.New("time limit")
	errHeapLimit = errors.New("memory limit")
)

// EvalTool checks that src is a tool file, evaluates its page form (see
// toolFunction) and reads the metadata of the tool it returns. The Tool
// carries the page form, so the page registers exactly what was read here.
// The file is untrusted: it is evaluated in an evaluator process (see
// evaluator.go), as evalToolHere describes, and a file that brings its
// evaluator down is a *ToolError like any other. Errors are *ToolError.
func EvalTool(src string, lim ToolLimits) (Tool, error) {
	r := evalTools([]string{src}, lim, nil)[0]
	return r.tool, r.err
}

// sourceTooLarge is the error for a tool file over lim.Source bytes.
func sourceTooLarge(n int, lim ToolLimits) *ToolError {
	return &ToolError{Msg: fmt.Sprintf("tool file is %d bytes; the limit is %d", n, lim.Source)}
}

// evalToolHere is EvalTool in this process, as an evaluator runs it.
//
// The file runs in a fresh goja runtime holding only the
// ECMAScript built-ins: no fetch, require, timers, console or any Go value.
// Binary buffers (ArrayBuffer, typed arrays, DataView) are removed, and the
// built-ins that do work proportional to an array's length or a string's size
// inside one native call (every Array.prototype method, Array.from, the
// String.prototype methods, Function.prototype.apply, Reflect.apply and
// construct, JSON) are wrapped to refuse inputs over a million elements,
// because goja checks its interrupt only between instructions. The script is
// interrupted after lim.Time, or when the Go heap grows by more than
// lim.HeapGrowth (sampled every millisecond; the bound is approximate and
// process-wide). If a built-in still runs lim.Grace after the time limit, the
// evaluation is abandoned and reported (the error's abandoned set); its
// goroutine ends when the built-in returns and sees the interrupt, or with
// the evaluator.
//
// The tool's metadata is read without running its code: every property is read through its
// descriptor, so a getter is reported rather than called, a Proxy is refused,
// and only strings, numbers, booleans, null, arrays and ordinary objects are
// copied out, within size limits. execute must be a function and is never
// called. Errors are *ToolError.
func evalToolHere(src string, lim ToolLimits) (Tool, error) {
	lim = lim.withDefaults()
	if len(src) > lim.Source {
		return Tool{}, sourceTooLarge(len(src), lim)
	}
	fn, err := toolFunction(src)
	if err != nil {
		return Tool{}, err
	}
	// The page form, called: what the page runs to get the tool.
	ast, err := parseScript("(" + fn + ")()")
	if err != nil {
		return Tool{}, syntaxError(err)
	}
	prg, err := goja.CompileAST(ast, false)
	if err != nil {
		return Tool{}, compileError(err)
	}

	vm := goja.New()
	// The prelude is ours and trusted: it runs before the clock starts, so
	// a loaded machine cannot charge its time to the tool file.
	gopd, err := harden(vm)
	if err != nil {
		return Tool{}, err
	}
	done := make(chan evalResult, 1)
	go func() { done <- evalProgram(vm, gopd, prg) }()

	timer := time.AfterFunc(lim.Time, func() { vm.Interrupt(errTimeLimit) })
	defer timer.Stop()
	stopWatch := watchHeap(vm, lim.HeapGrowth)
	defer stopWatch()

	select {
	case r := <-done:
		if r.err != nil {
			var te *ToolError
			if errors.As(r.err, &te) && te.Line == 0 && te.property != "" {
				te.Line = propertyLine(src, te.property)
			}
			return Tool{}, r.err
		}
		r.tool.Source, r.tool.Function = src, fn
		return r.tool, nil
	case <-time.After(lim.Time + lim.Grace):
		vm.Interrupt(errTimeLimit)
		return Tool{}, &ToolError{Msg: fmt.Sprintf("tool file still ran %v after its %v time limit (a built-in call ignored the interrupt); abandoned", lim.Grace, lim.Time), abandoned: true}
	}
}

type evalResult struct {
	tool Tool
	err  error
}

// watchHeap interrupts vm when the heap grows by more than limit bytes. The
// returned function stops the watcher and waits for it to exit.
func watchHeap(vm *goja.Runtime, limit uint64) func() {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
	base := read()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if now := read(); now > base && now-base > limit {
					vm.Interrupt(errHeapLimit)
					return
				}
			}
		}
	})
	return func() {
		close(stop)
		wg.Wait()
	}
}

// harden runs the prelude in vm and returns Object.getOwnPropertyDescriptor
// as it was before any tool code ran.
func harden(vm *goja.Runtime) (goja.Callable, error) {
	if _, err := vm.RunProgram(preludeProgram()); err != nil {
		return nil, fmt.Errorf("tool prelude: %w", err)
	}
	gopd, ok := goja.AssertFunction(vm.Get("Object").ToObject(vm).Get("getOwnPropertyDescriptor"))
	if !ok {
		return nil, errors.New("tool prelude: no Object.getOwnPropertyDescriptor")
	}
	return gopd, nil
}

// evalProgram runs the tool program, then reads the metadata, all on the
// calling goroutine under vm's interrupt.
func evalProgram(vm *goja.Runtime, gopd goja.Callable, prg *goja.Program) (res evalResult) {
	r := &metaReader{vm: vm, gopd: gopd, budget: maxMetaNodes}
	defer func() {
		if p := recover(); p != nil {
			res = evalResult{err: r.runtimeError(p)}
		}
	}()
	v, err := vm.RunProgram(prg)
	if err != nil {
		return evalResult{err: r.runtimeError(err)}
	}
	t, err := r.tool(v)
	if err != nil {
		return evalResult{err: r.runtimeError(err)}
	}
	return evalResult{tool: t}
}

// syntaxError turns a parse error into a ToolError at its first line.
func syntaxError(err error) *ToolError {
	var list parser.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		return &ToolError{Line: list[0].Position.Line, Msg: "syntax error: " + list[0].Message}
	}
	return &ToolError{Msg: "syntax error: " + err.Error()}
}

// compileError turns a compile error (a strict-mode early error, say) into
// a ToolError at its line.
func compileError(err error) *ToolError {
	var se *goja.CompilerSyntaxError
	if errors.As(err, &se) && se.File != nil {
		return &ToolError{Line: se.File.Position(se.Offset).Line, Msg: "syntax error: " + se.Message}
	}
	return &ToolError{Msg: err.Error()}
}

// runtimeError turns what the runtime threw (an error or a recovered panic)
// into a ToolError.
func (r *metaReader) runtimeError(v any) *ToolError {
	var te *ToolError
	var ie *goja.InterruptedError
	var ex *goja.Exception
	err, _ := v.(error)
	switch {
	case err == nil:
		return &ToolError{Msg: fmt.Sprintf("tool file failed: %v", v)}
	case errors.As(err, &te):
		return te
	case errors.As(err, &ie):
		switch ie.Value() {
		case errHeapLimit:
			return &ToolError{Msg: "tool file stopped: it used too much memory"}
		default:
			return &ToolError{Msg: "tool file stopped: it ran past its time limit"}
		}
	case errors.As(err, &ex):
		line := 0
		if st := ex.Stack(); len(st) > 0 {
			line = st[0].Position().Line
		}
		msg := "exception"
		if val := ex.Value(); val != nil {
			msg = r.describeThrown(val)
		}
		return &ToolError{Line: line, Msg: "tool file threw: " + msg + pageGlobalHint(msg)}
	default:
		return &ToolError{Msg: "tool file failed: " + err.Error()}
	}
}

// pageGlobals are names a page has and a tool file's top-level statements
// do not: they run in validate too, where there is no page.
var pageGlobals = map[string]bool{
	"window": true, "document": true, "location": true, "navigator": true, "fetch": true,
	"localStorage": true, "sessionStorage": true, "console": true, "setTimeout": true,
	"setInterval": true, "URL": true, "URLSearchParams": true, "history": true, "self": true,
}

// pageGlobalHint explains a ReferenceError for a page global.
func pageGlobalHint(msg string) string {
	name, ok := strings.CutPrefix(msg, "ReferenceError: ")
	if name, ok = strings.CutSuffix(name, " is not defined"); ok && pageGlobals[name] {
		return " (a tool file's top-level statements also run where pairbench reads the file, which has no page: use " +
			name + " inside execute)"
	}
	return ""
}

// describeThrown renders a thrown value without calling its code: a
// primitive as itself, an Error as "name: message" read from data
// properties, any other object as its class.
func (r *metaReader) describeThrown(v goja.Value) (msg string) {
	defer func() {
		if recover() != nil {
			msg = "an exception"
		}
	}()
	o, ok := v.(*goja.Object)
	if !ok {
		return clip(v.String())
	}
	if o.ClassName() != "Error" {
		return "a thrown " + o.ClassName()
	}
	text := func(obj *goja.Object, key string) string {
		for range 4 { // own property, then a few prototypes up
			if obj == nil {
				return ""
			}
			if val, present, err := r.own(obj, key); err == nil && present {
				if _, isObj := val.(*goja.Object); !isObj && val != nil {
					return clip(val.String())
				}
				return ""
			}
			obj = obj.Prototype()
		}
		return ""
	}
	name, message := text(o, "name"), text(o, "message")
	if message == "" {
		return name
	}
	return name + ": " + message
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// metaReader copies plain data out of the runtime without calling the tool
// file's code (except Proxy traps, which are refused, and the interrupt
// bounds anything else).
type metaReader struct {
	// property is the top-level property of the tool being read.
	property string
	vm       *goja.Runtime
	gopd     goja.Callable // Object.getOwnPropertyDescriptor, taken before the tool ran
	budget   int
}

// metaError is a problem with the shape of a tool's metadata.
func metaError(format string, args ...any) *ToolError {
	return &ToolError{Msg: fmt.Sprintf(format, args...)}
}

func (r *metaReader) tool(v goja.Value) (Tool, error) {
	t, err := r.readTool(v)
	var te *ToolError
	if errors.As(err, &te) && te.property == "" {
		te.property = r.property
	}
	return t, err
}

// readTool is tool, noting in r.property the top-level property it reads.
func (r *metaReader) readTool(v goja.Value) (Tool, error) {
	obj, ok := v.(*goja.Object)
	if !ok || obj.ClassName() != "Object" || obj.ExportType() == reflect.TypeFor[goja.Proxy]() {
		return Tool{}, metaError("tool file must end in one object literal, like ({ name: ..., execute(input) {...} })")
	}
	r.property = ""
	if err := knownKeys(obj, "", toolKeys); err != nil {
		return Tool{}, err
	}
	var t Tool
	var err error
	str := func(key string) string {
		if err != nil {
			return ""
		}
		var val any
		r.property = key
		val, err = r.field(obj, key)
		s, ok := val.(string)
		if err == nil && val != nil && !ok {
			err = metaError("%s must be a string", key)
		}
		return s
	}
	t.Name = str("name")
	t.Title = str("title")
	t.Description = str("description")
	if err != nil {
		return Tool{}, err
	}

	r.property = "inputSchema"
	schema, err := r.field(obj, "inputSchema")
	if err != nil {
		return Tool{}, err
	}
	if schema != nil {
		m, ok := schema.(map[string]any)
		if !ok {
			return Tool{}, metaError("inputSchema must be an object")
		}
		t.InputSchema = m
	}

	r.property = "annotations"
	ann, err := r.field(obj, "annotations")
	if err != nil {
		return Tool{}, err
	}
	if ann != nil {
		m, ok := ann.(map[string]any)
		if !ok {
			return Tool{}, metaError("annotations must be an object")
		}
		if err := knownKeys(m, "annotations.", annotationKeys); err != nil {
			return Tool{}, err
		}
		if ro, present := m["readOnlyHint"]; present {
			b, ok := ro.(bool)
			if !ok {
				return Tool{}, metaError("annotations.readOnlyHint must be true or false")
			}
			t.ReadOnly = b
		}
	}

	r.property = "urlPatterns"
	pats, err := r.field(obj, "urlPatterns")
	if err != nil {
		return Tool{}, err
	}
	if pats != nil {
		list, ok := pats.([]any)
		if !ok {
			return Tool{}, metaError("urlPatterns must be a list of strings")
		}
		for i, p := range list {
			s, ok := p.(string)
			if !ok {
				return Tool{}, metaError("urlPatterns[%d] must be a string", i)
			}
			t.URLPatterns = append(t.URLPatterns, s)
		}
	}

	r.property = "execute"
	exec, present, err := r.own(obj, "execute")
	if err != nil {
		return Tool{}, err
	}
	if eo, ok := exec.(*goja.Object); !present || !ok || eo.ClassName() != "Function" {
		return Tool{}, metaError("execute must be a function")
	}
	return t, nil
}

// toolKeys are the properties a tool object may have: what the page's
// registerTool reads (WebMCP's tool descriptor), and pairbench's
// urlPatterns. annotationKeys are those of its annotations.
var (
	toolKeys       = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations", "urlPatterns", "execute"}
	annotationKeys = []string{"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint", "untrustedContentHint"}
)

// knownKeys refuses a property of obj (a *goja.Object or the plain data
// copied from one) that is not in known: a misspelt inputSchema or
// readOnlyHint would register a tool without its schema, or not at all,
// without a word. prefix names where obj is in the tool ("annotations.").
func knownKeys(obj any, prefix string, known []string) error {
	var keys []string
	switch o := obj.(type) {
	case *goja.Object:
		keys = o.Keys()
	case map[string]any:
		keys = slices.Sorted(maps.Keys(o))
	}
	for _, k := range keys {
		if slices.Contains(known, k) {
			continue
		}
		err := metaError("unknown property %s%s (known: %s)", prefix, k, strings.Join(known, ", "))
		for _, want := range known {
			if strings.EqualFold(k, want) {
				err = metaError("unknown property %s%s: did you mean %s%s?", prefix, k, prefix, want)
			}
		}
		if prefix == "" {
			err.property = k
		}
		return err
	}
	return nil
}

// own reads obj's own property key through its descriptor. It reports a
// getter or setter as an error instead of calling it.
func (r *metaReader) own(obj *goja.Object, key string) (goja.Value, bool, error) {
	d, err := r.gopd(goja.Undefined(), obj, r.vm.ToValue(key))
	if err != nil {
		return nil, false, err
	}
	if goja.IsUndefined(d) {
		return nil, false, nil
	}
	desc := d.ToObject(r.vm)
	for _, acc := range []string{"get", "set"} {
		if f := desc.Get(acc); f != nil && !goja.IsUndefined(f) {
			return nil, false, metaError("%s is a getter or setter; tool metadata must be plain data", key)
		}
	}
	return desc.Get("value"), true, nil
}

// field reads obj's own property key as plain data; nil when absent.
func (r *metaReader) field(obj *goja.Object, key string) (any, error) {
	v, present, err := r.own(obj, key)
	if err != nil || !present {
		return nil, err
	}
	return r.plain(v, key, 0)
}

// plain copies v as JSON-like Go data: nil, bool, float64, string, []any,
// map[string]any.
func (r *metaReader) plain(v goja.Value, path string, depth int) (any, error) {
	r.budget--
	if r.budget < 0 {
		return nil, metaError("tool metadata is too large (over %d values)", maxMetaNodes)
	}
	if depth > maxMetaDepth {
		return nil, metaError("%s is nested too deeply", path)
	}
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return nil, nil
	}
	obj, isObj := v.(*goja.Object)
	if !isObj {
		switch v.ExportType().Kind() {
		case reflect.String:
			s := v.String()
			if len(s) > maxMetaString {
				return nil, metaError("%s is longer than %d characters", path, maxMetaString)
			}
			return s, nil
		case reflect.Bool:
			return v.ToBoolean(), nil
		case reflect.Int64, reflect.Float64:
			f := v.ToFloat()
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, metaError("%s is not a finite number", path)
			}
			return f, nil
		default:
			return nil, metaError("%s is not plain data (a %s)", path, v.ExportType())
		}
	}
	if obj.ExportType() == reflect.TypeFor[goja.Proxy]() {
		return nil, metaError("%s is a Proxy; tool metadata must be plain data", path)
	}
	switch obj.ClassName() {
	case "Array":
		lv, _, err := r.own(obj, "length")
		if err != nil {
			return nil, err
		}
		n := lv.ToInteger()
		if n > maxMetaItems {
			return nil, metaError("%s has more than %d items", path, maxMetaItems)
		}
		out := make([]any, 0, n)
		for i := range n {
			item, _, err := r.own(obj, strconv.FormatInt(i, 10))
			if err != nil {
				return nil, err
			}
			pv, err := r.plain(item, fmt.Sprintf("%s[%d]", path, i), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, pv)
		}
		return out, nil
	case "Object":
		keys := obj.Keys()
		if len(keys) > maxMetaItems {
			return nil, metaError("%s has more than %d keys", path, maxMetaItems)
		}
		out := make(map[string]any, len(keys))
		for _, k := range keys {
			item, _, err := r.own(obj, k)
			if err != nil {
				return nil, err
			}
			pv, err := r.plain(item, path+"."+k, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = pv
		}
		return out, nil
	default:
		return nil, metaError("%s is not plain data (a %s)", path, obj.ClassName())
	}
}

// preludeProgram is the prelude, compiled once: compiling it took half of
// a tool file's evaluation, and a goja Program runs in any runtime.
var preludeProgram = sync.OnceValue(func() *goja.Program {
	return goja.MustCompile("prelude.js", prelude, true)
})

// prelude hardens a fresh runtime before a tool file runs in it. It is
// trusted code: it removes binary buffers and wraps the built-ins that do
// unbounded work inside a single native call.
const prelude = `(function () {
  "use strict";
  const ARRAY_CAP = 1 << 20, STRING_CAP = 1 << 22;
  const g = globalThis, apply = Reflect.apply, define = Object.defineProperty,
    gopd = Object.getOwnPropertyDescriptor, ownKeys = Reflect.ownKeys,
    isArray = Array.isArray, RangeErr = RangeError;
  for (const name of ["ArrayBuffer", "SharedArrayBuffer", "DataView", "Atomics",
    "Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array",
    "Int32Array", "Uint32Array", "Float32Array", "Float64Array",
    "BigInt64Array", "BigUint64Array", "WeakRef", "FinalizationRegistry"]) {
    delete g[name];
  }
  function refuse(what) { throw new RangeErr("pairbench: " + what + " is over the tool-file limit"); }
  function lengthOf(o) {
    if (o === null || o === undefined) return 0;
    const n = +o.length;
    return n === n ? n : 0;
  }
  function wrap(holder, key, check) {
    const d = gopd(holder, key);
    if (!d || typeof d.value !== "function" || key === "constructor") return;
    const f = d.value;
    define(holder, key, {
      value: function () { check(this, arguments); return apply(f, this, arguments); },
      writable: d.writable, enumerable: d.enumerable, configurable: d.configurable,
    });
  }
  function wrapAll(holder, check) { for (const key of ownKeys(holder)) wrap(holder, key, check); }

  wrapAll(Array.prototype, function (self) { if (lengthOf(self) > ARRAY_CAP) refuse("an array"); });
  wrap(Array, "from", function (_, args) { if (lengthOf(args[0]) > ARRAY_CAP) refuse("an array"); });
  wrapAll(String.prototype, function (self, args) {
    if (typeof self === "string" && self.length > STRING_CAP) refuse("a string");
    for (let i = 0; i < args.length; i++) {
      if (typeof args[i] === "number" && args[i] > STRING_CAP) refuse("a string");
    }
  });
  const repeat = String.prototype.repeat;
  define(String.prototype, "repeat", {
    value: function (n) { if (String(this).length * n > STRING_CAP) refuse("a string"); return apply(repeat, this, [n]); },
    writable: true, configurable: true,
  });
  const argsCheck = function (_, args) { if (lengthOf(args[1]) > ARRAY_CAP) refuse("an argument list"); };
  wrap(Reflect, "apply", function (_, args) { if (lengthOf(args[2]) > ARRAY_CAP) refuse("an argument list"); });
  wrap(Reflect, "construct", argsCheck);
  wrap(Function.prototype, "apply", argsCheck);
  function walk(v, depth, seen) {
    if (v === null || typeof v !== "object" || seen.has(v)) return;
    if (depth > 64) refuse("nesting");
    seen.add(v);
    if (isArray(v)) {
      if (v.length > ARRAY_CAP) refuse("an array");
      for (let i = 0; i < v.length; i++) walk(v[i], depth + 1, seen);
    } else {
      for (const k of ownKeys(v)) walk(v[k], depth + 1, seen);
    }
  }
  wrap(JSON, "stringify", function (_, args) { walk(args[0], 0, new Set()); });
  wrap(JSON, "parse", function (_, args) { if (typeof args[0] === "string" && args[0].length > STRING_CAP) refuse("a string"); });
})();`
