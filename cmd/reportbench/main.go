// Command reportbench measures `pairbench report` against the least any
// reader of the same rows must do: a naive loop that only JSON-decodes
// every row, in python (json.loads per line) and in Go (json.Unmarshal of
// each line into a pairbench.Row). The three run side by side, interleaved
// round after round, each a child process whose wall time and peak resident
// memory (getrusage) are taken, so that a busy machine slows all of them
// alike; the report is the median of the rounds and the ratios of the
// medians, of wall time and of CPU time (user and system, all threads).
// The goal (issues 14 and 32): the whole report in at most half the time
// of the python loop, in at most 256 MiB.
//
//	go run ./cmd/reportbench -intents 1000   # 1,000,000 rows
//	go run ./cmd/reportbench -intents 100    # 100,000 rows
//
// It builds pairbench and writes the run with examples/runs/gen -big (rows
// the size a real trial writes) into -dir, reusing a run already there.
// The report of a run past bench.SiteUpFrontPairs pairs (50,000: past
// -intents 100) writes no intent pages, which pairbench view and
// publishing write; the report of 100 intents and fewer includes them. docs/cli.md has the figures.
package main

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
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/rundir"
)

// naiveGo is the argument that makes this program the naive Go loop.
const naiveGo = "-naive-go"

// naivePython is the naive python loop over the file in argv[1].
const naivePython = `import json, sys
n = 0
for line in open(sys.argv[1], "rb"):
    json.loads(line)
    n += 1
print(n)
`

func main() {
	if len(os.Args) == 3 && os.Args[1] == naiveGo {
		if err := decodeEveryRow(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "reportbench:", err)
			os.Exit(1)
		}
		return
	}
	intents := flag.Int("intents", 1000, "intents of 500 pairs (two rows each) in the generated run")
	rounds := flag.Int("rounds", 3, "rounds of the three commands, interleaved")
	dir := flag.String("dir", "", "directory for the binaries and the run (default a directory under $TMPDIR named by -intents, kept for the next time)")
	flag.Parse()
	if *dir == "" {
		*dir = filepath.Join(os.TempDir(), "pairbench-reportbench-"+strconv.Itoa(*intents))
	}
	if err := run(*dir, *intents, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "reportbench:", err)
		os.Exit(1)
	}
}

// decodeEveryRow is the naive Go loop: json.Unmarshal of every line.
func decodeEveryRow(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	n := 0
	for sc.Scan() {
		var row pairbench.Row
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			return fmt.Errorf("line %d: %w", n+1, err)
		}
		n++
	}
	fmt.Println(n)
	return sc.Err()
}

// measured is one child's wall time, CPU time (user and system) and peak
// resident memory.
type measured struct {
	wall, cpu time.Duration
	rss       int64 // bytes
}

// side is one of the commands compared.
type side struct {
	name string
	cmd  func() *exec.Cmd
	runs []measured
}

func run(dir string, intents, rounds int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	runDir := filepath.Join(dir, "run")
	pb := filepath.Join(dir, "pairbench")
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "building pairbench")
	if err := command("go", "build", "-o", pb, "./cmd/pairbench").Run(); err != nil {
		return fmt.Errorf("build pairbench (run reportbench from the repository root): %w", err)
	}
	want := strconv.Itoa(intents)
	if have, _ := os.ReadFile(filepath.Join(dir, "intents")); string(have) != want {
		fmt.Fprintf(os.Stderr, "writing a run of %d intents into %s\n", intents, runDir)
		if err := os.RemoveAll(runDir); err != nil {
			return err
		}
		if err := command("go", "run", "./examples/runs/gen", "-big", want, "-out", runDir).Run(); err != nil {
			return fmt.Errorf("generate the run: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "intents"), []byte(want), 0o644); err != nil {
			return err
		}
	}
	rowsFile := rundir.RunDir{Path: runDir}.File(rundir.RowsFile)
	st, err := os.Stat(rowsFile)
	if err != nil {
		return err
	}
	lines, err := countLines(rowsFile)
	if err != nil {
		return err
	}
	out := filepath.Join(dir, "report")
	sides := []*side{
		{name: "pairbench report (JSON, Markdown, HTML)", cmd: func() *exec.Cmd { return exec.Command(pb, "report", runDir, "--out", out) }},
		{name: "naive python loop (json.loads per line)", cmd: func() *exec.Cmd { return exec.Command("python3", "-c", naivePython, rowsFile) }},
		{name: "naive Go loop (json.Unmarshal per line)", cmd: func() *exec.Cmd { return exec.Command(self, naiveGo, rowsFile) }},
	}
	for r := range rounds {
		for k := range sides {
			s := sides[(k+r)%len(sides)] // who goes first changes every round
			m, err := measure(s.cmd())
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			s.runs = append(s.runs, m)
			fmt.Fprintf(os.Stderr, "round %d  %-42s %6.2f s  CPU %6.2f s  %4d MiB\n", r+1, s.name, m.wall.Seconds(), m.cpu.Seconds(), m.rss>>20)
		}
	}

	fmt.Printf("rows: %d lines, %.0f MB (%s); %d rounds, interleaved; medians\n\n", lines, float64(st.Size())/1e6, rowsFile, rounds)
	fmt.Printf("| command | wall time | time / python loop | CPU time | CPU / python loop | peak RSS |\n|---|--:|--:|--:|--:|--:|\n")
	report, python, goLoop := median(sides[0].runs), median(sides[1].runs), median(sides[2].runs)
	pythonCPU := medianCPU(sides[1].runs)
	for _, s := range sides {
		m, c := median(s.runs), medianCPU(s.runs)
		fmt.Printf("| %s | %.2f s | %.2f | %.2f s | %.2f | %d MiB |\n", s.name,
			m.wall.Seconds(), m.wall.Seconds()/python.wall.Seconds(), c.Seconds(), c.Seconds()/pythonCPU.Seconds(), peak(s.runs)>>20)
	}
	timeRatio := report.wall.Seconds() / python.wall.Seconds()
	rss := peak(sides[0].runs)
	cpuRatio := medianCPU(sides[0].runs).Seconds() / pythonCPU.Seconds()
	fmt.Printf("\nreport / python loop: %.2f (goal ≤ 0.50: %s)\n", timeRatio, met(timeRatio <= 0.5))
	fmt.Printf("report / python loop, CPU time: %.2f (the same goal on one core: %s)\n", cpuRatio, met(cpuRatio <= 0.5))
	fmt.Printf("report / Go loop: %.2f\n", report.wall.Seconds()/goLoop.wall.Seconds())
	fmt.Printf("report peak RSS: %d MiB (goal ≤ 256 MiB: %s)\n", rss>>20, met(rss <= 256<<20))
	return nil
}

// command runs a go command from the repository root, its output on
// stderr.
func command(name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	return c
}

// measure runs c to its end, its output discarded.
func measure(c *exec.Cmd) (measured, error) {
	var stderr limitedBuffer
	c.Stderr = &stderr
	start := time.Now()
	err := c.Run()
	wall := time.Since(start)
	if err != nil {
		return measured{}, fmt.Errorf("%w: %s", err, stderr.b)
	}
	ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return measured{}, errors.New("no resource usage for the child")
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return measured{wall: wall, cpu: cpu, rss: ru.Maxrss * 1024}, nil // Linux: Maxrss is in KiB
}

// limitedBuffer keeps the first 4 kB written to it.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func median(ms []measured) measured {
	s := slices.SortedFunc(slices.Values(ms), func(x, y measured) int { return int(x.wall - y.wall) })
	return s[len(s)/2]
}

func medianCPU(ms []measured) time.Duration {
	s := slices.SortedFunc(slices.Values(ms), func(x, y measured) int { return int(x.cpu - y.cpu) })
	return s[len(s)/2].cpu
}

func peak(ms []measured) int64 {
	var p int64
	for _, m := range ms {
		p = max(p, m.rss)
	}
	return p
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	buf := make([]byte, 1<<20)
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
