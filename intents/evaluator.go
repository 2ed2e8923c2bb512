package intents

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dlclark/regexp2/v2"
)

// Tool files are untrusted programs, and goja runs them inside the Go process
// that evaluates them, where the interrupt and the heap watch cannot stop
// everything: one native call can ask for terabytes at once (a fatal
// out-of-memory error ends the whole process), and one can run for ever
// without looking at the interrupt. So EvalTool and Load evaluate tool files
// in child processes, the evaluators: the running binary started again with
// evaluatorArg (the init function below turns any binary that links this
// package into one, so pairbench, its tests and every other command serve
// without an install step). An evaluator limits its own address space and
// CPU time before it reads a file, has no environment, dies with its parent,
// and is killed and reaped when a file runs past its wall-clock limit. A bomb
// ends its evaluator, never the caller: the caller reports it as that file's
// problem and evaluates the next file in a fresh evaluator.

// evaluatorArg is the first argument that makes a binary linking this
// package a tool-file evaluator (serveEvaluator) instead of itself.
const evaluatorArg = "__pairbench-tool-eval"

func init() {
	if len(os.Args) > 1 && os.Args[1] == evaluatorArg {
		os.Exit(serveEvaluator(os.Stdin, os.Stdout, os.Args[2:]))
	}
}

const (
	// evaluatorHello is the first line an evaluator writes, once its
	// limits are set: the caller knows it started what it meant to.
	evaluatorHello = "pairbench tool evaluator 1"
	// evaluatorStart bounds an evaluator's start, up to its hello.
	evaluatorStart = 30 * time.Second
	// replySlack is how long past a file's Time+Grace the caller waits for
	// the evaluator's own reply (which says more) before it kills it.
	replySlack = time.Second
	// maxReply bounds one reply: the page form (the file, at most
	// DefaultToolSource bytes, JSON-escaped) and the metadata.
	maxReply = 16 << 20
	// evaluatorFilesEach is how many files make it worth starting another
	// evaluator, up to GOMAXPROCS of them.
	evaluatorFilesEach = 4
	// exitCPU is an evaluator's exit code when a file used up its CPU time.
	exitCPU = 3
)

// evalRequest is one tool file sent to an evaluator.
type evalRequest struct {
	Src string
}

// evalReply is an evaluator's answer for one file: the tool, or why not.
type evalReply struct {
	Name, Title, Description string
	InputSchema              map[string]any
	ReadOnly                 bool
	URLPatterns              []string
	Function                 string
	// Err and Line are the *ToolError, when the file has no tool.
	Err  string
	Line int
	// Stuck says a built-in still runs in the evaluator, which therefore
	// ends after this reply.
	Stuck bool
}

func (r evalReply) result(src string) (Tool, error) {
	if r.Err != "" {
		return Tool{}, &ToolError{Line: r.Line, Msg: r.Err}
	}
	return Tool{
		Name: r.Name, Title: r.Title, Description: r.Description, InputSchema: r.InputSchema,
		ReadOnly: r.ReadOnly, URLPatterns: r.URLPatterns, Source: src, Function: r.Function,
	}, nil
}

// evalTools evaluates every tool file in srcs in evaluators (see above),
// in parallel when there are many, and returns each file's tool or
// *ToolError, in the order of srcs. ahead, when not nil, is an evaluator
// started ahead of the files (startAhead), used first.
func evalTools(srcs []string, lim ToolLimits, ahead <-chan startedEvaluator) []evalResult {
	lim = lim.withDefaults()
	out := make([]evalResult, len(srcs))
	next := make(chan int, len(srcs))
	for i := range srcs {
		next <- i
	}
	close(next)
	workers := min(runtime.GOMAXPROCS(0), (len(srcs)+evaluatorFilesEach-1)/evaluatorFilesEach)
	if workers == 0 && ahead != nil {
		(<-ahead).ev.stop()
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var ev *evaluator
			var startErr error
			if w == 0 && ahead != nil {
				s := <-ahead
				ev, startErr = s.ev, s.err
			}
			defer func() { ev.stop() }()
			for i := range next {
				if len(srcs[i]) > lim.Source {
					out[i].err = sourceTooLarge(len(srcs[i]), lim)
					continue
				}
				if ev == nil && startErr == nil {
					ev, startErr = startEvaluator(lim)
				}
				if startErr != nil {
					// Every later start would fail the same way, slowly.
					out[i].err = &ToolError{Msg: "not evaluated: " + startErr.Error()}
					continue
				}
				reply, err := ev.eval(srcs[i])
				if err != nil {
					out[i].err = ev.failure(err)
					ev = nil // stopped by failure
					continue
				}
				out[i].tool, out[i].err = reply.result(srcs[i])
				if reply.Stuck {
					ev.stop()
					ev = nil
				}
			}
		})
	}
	wg.Wait()
	return out
}

// startedEvaluator is an evaluator started ahead of its files, or why it
// did not start.
type startedEvaluator struct {
	ev  *evaluator
	err error
}

// startAhead starts an evaluator with lim while the caller reads the files
// it is for; evalTools takes it.
func startAhead(lim ToolLimits) <-chan startedEvaluator {
	c := make(chan startedEvaluator, 1)
	go func() {
		ev, err := startEvaluator(lim.withDefaults())
		c <- startedEvaluator{ev, err}
	}()
	return c
}

// evaluator is one evaluator process, its pipes, and what it wrote on
// stderr (the start of it).
type evaluator struct {
	lim    ToolLimits
	cmd    *exec.Cmd
	in     *os.File // its stdin
	out    *os.File // its stdout
	r      *bufio.Reader
	stderr *headBuffer
	killed bool // by us, past its wall-clock limit
}

// startEvaluator starts an evaluator and waits for its hello.
func startEvaluator(lim ToolLimits) (*evaluator, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("tool-file evaluator: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("tool-file evaluator: %w", err)
	}
	e := &evaluator{lim: lim, in: inW, out: outR, r: bufio.NewReaderSize(outR, 64<<10), stderr: &headBuffer{max: 4 << 10}}
	e.cmd = exec.Command("/proc/self/exe", evaluatorArg,
		"-time", lim.Time.String(), "-grace", lim.Grace.String(), "-cpu", lim.CPU.String(),
		"-heap", strconv.FormatUint(lim.HeapGrowth, 10), "-memory", strconv.FormatUint(lim.Memory, 10))
	e.cmd.Env = []string{} // nothing of the caller's: keys stay out of reach
	e.cmd.Stdin, e.cmd.Stdout, e.cmd.Stderr = inR, outW, e.stderr
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = e.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start the tool-file evaluator: %w", err)
	}
	line, err := e.readLine(evaluatorStart)
	if err != nil || string(line) != evaluatorHello {
		e.kill()
		return nil, fmt.Errorf("the tool-file evaluator did not start: %s", e.exitReason(err))
	}
	return e, nil
}

// eval sends src to the evaluator and reads its reply. An error means the
// evaluator failed (it died, or ran past the file's wall-clock limit and
// was killed); it is stopped then.
func (e *evaluator) eval(src string) (evalReply, error) {
	req, err := json.Marshal(evalRequest{Src: src})
	if err != nil {
		return evalReply{}, err
	}
	deadline := e.lim.Time + e.lim.Grace + replySlack
	if err := e.in.SetWriteDeadline(time.Now().Add(deadline)); err != nil {
		return evalReply{}, err
	}
	if _, err := e.in.Write(append(req, '\n')); err != nil {
		e.kill()
		return evalReply{}, err
	}
	line, err := e.readLine(deadline)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		e.killed = true
	}
	if err != nil {
		e.kill()
		return evalReply{}, err
	}
	var reply evalReply
	if err := json.Unmarshal(line, &reply); err != nil {
		e.kill()
		return evalReply{}, fmt.Errorf("unreadable reply: %w", err)
	}
	return reply, nil
}

// readLine reads one line of the evaluator's, within d.
func (e *evaluator) readLine(d time.Duration) ([]byte, error) {
	if err := e.out.SetReadDeadline(time.Now().Add(d)); err != nil {
		return nil, err
	}
	var line []byte
	for {
		chunk, err := e.r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxReply {
			return nil, fmt.Errorf("a reply over %d bytes", maxReply)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return bytes.TrimSuffix(line, []byte("\n")), nil
	}
}

// kill kills the evaluator and reaps it.
func (e *evaluator) kill() {
	e.in.Close()
	e.cmd.Process.Kill()
	e.cmd.Wait()
	e.out.Close()
}

// stop ends the evaluator: it exits when its input ends, or is killed.
func (e *evaluator) stop() {
	if e == nil || e.cmd.ProcessState != nil {
		return
	}
	e.kill()
}

// failure says why the file the evaluator was reading has no tool, once
// the evaluator failed with err and was stopped.
func (e *evaluator) failure(err error) *ToolError {
	code := -1
	if st := e.cmd.ProcessState; st != nil {
		code = st.ExitCode()
	}
	stderr := e.stderr.String()
	switch {
	case e.killed:
		return &ToolError{Msg: fmt.Sprintf("tool file still ran %v after its %v time limit; its evaluation was killed", e.lim.Grace+replySlack, e.lim.Time)}
	case code == exitCPU:
		return &ToolError{Msg: fmt.Sprintf("tool file used more than its %v of CPU time; its evaluation was killed", e.lim.CPU)}
	case strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory") ||
		strings.Contains(stderr, "failed to allocate"): // the last, the race detector's
		return &ToolError{Msg: fmt.Sprintf("tool file used more than the %d MiB of memory its evaluation may; its evaluation was killed", e.lim.Memory>>20)}
	case strings.Contains(stderr, "stack overflow") || strings.Contains(stderr, "stack exceeds"):
		return &ToolError{Msg: "tool file recursed too deeply; its evaluation was killed"}
	}
	return &ToolError{Msg: "tool file's evaluation failed: " + e.exitReason(err)}
}

// exitReason describes how the evaluator ended, once it has been reaped.
func (e *evaluator) exitReason(err error) string {
	why := "no reply"
	if err != nil {
		why = err.Error()
	}
	if st := e.cmd.ProcessState; st != nil {
		why = st.String()
	}
	if first, _, _ := strings.Cut(strings.TrimSpace(e.stderr.String()), "\n"); first != "" {
		why += ": " + clip(first)
	}
	return why
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (b *headBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *headBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// serveEvaluator is the evaluator's main: it limits itself, says hello, then
// evaluates the files its input holds (evalRequest, one JSON value a line),
// one at a time, and writes a reply a line for each. It returns the exit
// code when its input ends or a file leaves a built-in running.
func serveEvaluator(in io.Reader, out io.Writer, args []string) int {
	var lim ToolLimits
	flags := flag.NewFlagSet(evaluatorArg, flag.ContinueOnError)
	flags.DurationVar(&lim.Time, "time", 0, "")
	flags.DurationVar(&lim.Grace, "grace", 0, "")
	flags.DurationVar(&lim.CPU, "cpu", 0, "")
	flags.Uint64Var(&lim.HeapGrowth, "heap", 0, "")
	flags.Uint64Var(&lim.Memory, "memory", 0, "")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	lim = lim.withDefaults()
	// This process evaluates tool files and nothing else, so goja's
	// regular expressions may take its global: a backtracking match ends
	// at the file's time limit instead of running for ever.
	regexp2.DefaultMatchTimeout = lim.Time
	if err := limitAddressSpace(lim.Memory); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	xcpu := make(chan os.Signal, 1)
	signal.Notify(xcpu, syscall.SIGXCPU)
	go func() {
		<-xcpu
		os.Exit(exitCPU)
	}()

	w := bufio.NewWriter(out)
	fmt.Fprintln(w, evaluatorHello)
	if w.Flush() != nil {
		return 1
	}
	dec := json.NewDecoder(bufio.NewReader(in))
	for {
		var req evalRequest
		if err := dec.Decode(&req); err == io.EOF {
			return 0
		} else if err != nil {
			fmt.Fprintln(os.Stderr, "tool evaluator: bad request:", err)
			return 1
		}
		if err := limitCPU(lim.CPU); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		reply := evaluate(req.Src, lim)
		line, err := json.Marshal(reply)
		if err == nil && len(line) >= maxReply {
			line, err = json.Marshal(evalReply{Err: fmt.Sprintf("tool metadata is too large (over %d MiB as JSON)", maxReply>>20)})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "tool evaluator:", err)
			return 1
		}
		w.Write(append(line, '\n'))
		if w.Flush() != nil || reply.Stuck {
			return 0
		}
	}
}

// evaluate evaluates one file here, in the evaluator.
func evaluate(src string, lim ToolLimits) evalReply {
	t, err := evalToolHere(src, lim)
	if err != nil {
		var te *ToolError
		if !errors.As(err, &te) {
			te = &ToolError{Msg: err.Error()}
		}
		return evalReply{Err: te.Msg, Line: te.Line, Stuck: te.abandoned}
	}
	return evalReply{
		Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
		ReadOnly: t.ReadOnly, URLPatterns: t.URLPatterns, Function: t.Function,
	}
}

// limitAddressSpace caps the process's address space at what it maps now
// plus grow bytes: the Go runtime reserves hundreds of MiB as it starts, so
// the cap is set here rather than before the process started.
func limitAddressSpace(grow uint64) error {
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return fmt.Errorf("tool evaluator: %w", err)
	}
	size, _, _ := strings.Cut(string(statm), " ")
	pages, err := strconv.ParseUint(size, 10, 64)
	if err != nil {
		return fmt.Errorf("tool evaluator: /proc/self/statm: %w", err)
	}
	limit := pages*uint64(os.Getpagesize()) + grow
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		return fmt.Errorf("tool evaluator: limit the address space: %w", err)
	}
	return nil
}

// limitCPU gives the next file d of CPU time: the soft limit is set that far
// past what the process has used, and SIGXCPU ends the process (see
// serveEvaluator). The limit's unit is the second, so d is rounded up.
func limitCPU(d time.Duration) error {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return fmt.Errorf("tool evaluator: %w", err)
	}
	used := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_CPU, &rl); err != nil {
		return fmt.Errorf("tool evaluator: %w", err)
	}
	rl.Cur = min(uint64((used+d+time.Second-1)/time.Second), rl.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &rl); err != nil {
		return fmt.Errorf("tool evaluator: limit CPU time: %w", err)
	}
	return nil
}
