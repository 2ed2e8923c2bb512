package local

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// Check is the browser's self-check (pairbench sandbox check): it starts a
// browser as cfg configures it and fails closed, with a *sandbox.CheckError
// whose reason is one line, unless, seen from the host, every process of
// the browser runs as a user that is not root, without capabilities
// outside Chromium's own nested namespaces, with no_new_privs and a seccomp
// filter, in mount, PID and network namespaces that are not the host's,
// with only the browser's own variables in its environment and only /usr,
// a few /etc entries and its profile in its file system; a renderer runs in
// Chromium's own sandbox (a user namespace of its own and Chromium's seccomp
// filter on top of the sandbox's); a file: navigation is refused; and a
// request to a loopback port on this host is refused by its egress without
// reaching it. It returns other errors when the browser cannot be started.
//
// A check that passes logs no warning: its own loopback probe's refusal,
// the answer it wants, is logged at Debug.
func Check(ctx context.Context, cfg Config) error {
	cfg.Spares = 0
	cfg.Log = slog.New(probeAtDebug{cmp.Or(cfg.Log, slog.Default()).Handler()})
	p, err := New(cfg)
	if err != nil {
		return &sandbox.CheckError{Reason: "browser: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	b, err := open(ctx, p.cfg)
	if err != nil {
		return &sandbox.CheckError{Reason: "browser: cannot start a confined Chromium: " + firstLine(err.Error())}
	}
	defer b.Close(context.WithoutCancel(ctx))

	var problems []string
	// A page brings a renderer, whose sandbox is Chromium's.
	if _, err := b.Load(ctx, "data:text/html,<title>pairbench check</title>"); err != nil {
		problems = append(problems, "a page does not load: "+firstLine(err.Error()))
	}
	self, err := procNamespaces(os.Getpid())
	if err != nil {
		return fmt.Errorf("browser check: %w", err)
	}
	problems = append(problems, inspect(b.proc.cmd.Pid(), self)...)
	if _, err := b.proc.devToolsAnswers(ctx); err != nil {
		problems = append(problems, "the agent's DevTools socket does not answer: "+firstLine(err.Error()))
	}
	problems = append(problems, b.checkRefusals(ctx)...)
	if len(problems) > 0 {
		return &sandbox.CheckError{Reason: "the browser is not confined: " + strings.Join(problems, "; ")}
	}
	return nil
}

// checkRefusals tries, from the browser's start tab, a file: URL and a
// loopback port of this host that a listener holds.
func (b *Browser) checkRefusals(ctx context.Context) []string {
	var problems []string
	res, err := b.Navigate(ctx, "file:///etc/hostname")
	if err == nil && res == "" {
		problems = append(problems, "a file: URL is not refused")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return append(problems, "cannot listen on loopback for the egress probe: "+err.Error())
	}
	defer l.Close()
	var reached atomic.Bool
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			reached.Store(true)
			c.Close()
		}
	}()
	_, before := b.proc.Refusals()
	b.Navigate(ctx, "http://"+l.Addr().String()+"/")
	if reached.Load() {
		problems = append(problems, "the browser reached this host's loopback")
	}
	kept, _ := b.proc.Refusals()
	if !slices.ContainsFunc(kept[min(before, len(kept)):], func(r runner.Refusal) bool { return r.Host == "127.0.0.1" }) {
		problems = append(problems, "the egress did not refuse this host's loopback")
	}
	return problems
}

// probeAtDebug passes records on, but for the egress's refusal of a
// loopback address (the check's probe: nothing else the check loads asks
// for one), which it passes at Debug.
type probeAtDebug struct{ slog.Handler }

func (h probeAtDebug) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && r.Message == "egress denied" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "host" && a.Value.String() == "127.0.0.1" {
				r.Level = slog.LevelDebug
			}
			return true
		})
		if !h.Handler.Enabled(ctx, r.Level) {
			return nil
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h probeAtDebug) WithAttrs(as []slog.Attr) slog.Handler {
	return probeAtDebug{h.Handler.WithAttrs(as)}
}
func (h probeAtDebug) WithGroup(name string) slog.Handler {
	return probeAtDebug{h.Handler.WithGroup(name)}
}

// firstLine returns s up to its first line break.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
