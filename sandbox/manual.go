package sandbox

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
)

// Manual is a command run by hand under the policy the agents get
// (pairbench sandbox run): everything is denied but what its fields allow.
type Manual struct {
	// Allow lists the egress proxy's destinations, each HOST[:PORT,...]
	// (ParseAllowRule).
	Allow []string
	// ForwardPorts are host loopback ports reached on the same port inside.
	ForwardPorts []int
	// Secrets are NAME=HOSTVAR@HOST[,HOST] (ParseSecret): a placeholder in
	// NAME, swapped by the proxy for the host's HOSTVAR on requests to HOST.
	Secrets []string
	// Env names host variables passed in (those the host has set).
	Env []string
	// Workspace is a host directory mounted at /workspace ("": a fresh
	// empty one); Hide, ReadOnly and Limits are Policy's.
	Workspace      string
	Hide, ReadOnly []string
	Limits         Limits
	// Log receives the proxy's records.
	Log *slog.Logger
}

// Egress starts the egress proxy m allows, the host's secrets read with
// getenv. Its errors are all in m (a rule or secret that does not parse,
// a combination the proxy refuses). The caller closes the proxy.
func (m Manual) Egress(ctx context.Context, getenv func(string) string) (*Egress, error) {
	cfg := EgressConfig{ForwardPorts: m.ForwardPorts, Logger: m.Log}
	for _, h := range m.Allow {
		r, err := ParseAllowRule(h)
		if err != nil {
			return nil, fmt.Errorf("--allow-host: %w", err)
		}
		cfg.Allow = append(cfg.Allow, r)
	}
	for _, s := range m.Secrets {
		sec, err := ParseSecret(s, getenv)
		if err != nil {
			return nil, fmt.Errorf("--secret: %w", err)
		}
		cfg.Secrets = append(cfg.Secrets, sec)
	}
	e, err := NewEgress(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("sandbox run: %w", err)
	}
	return e, nil
}

// Run runs name with args to its end in a new sandbox of m's policy whose
// only way out is egress, its standard streams wired to stdin, stdout and
// stderr, and removes the sandbox. A command that exits with a status
// other than 0 is an *exec.ExitError.
func (m Manual) Run(ctx context.Context, egress *Egress, stdin io.Reader, stdout, stderr io.Writer, name string, args ...string) error {
	env := map[string]string{}
	for _, n := range m.Env {
		if v, ok := os.LookupEnv(n); ok {
			env[n] = v
		}
	}
	workspace := m.Workspace
	if workspace != "" {
		var err error
		if workspace, err = filepath.Abs(workspace); err != nil {
			return fmt.Errorf("--workspace: %w", err)
		}
	}
	sb, err := New(ctx, Policy{Workspace: workspace, Hide: m.Hide, ReadOnly: m.ReadOnly, Env: env, Egress: egress, Limits: m.Limits})
	if err != nil {
		return err
	}
	defer sb.Close()
	c := sb.Command(ctx, name, args...)
	c.Stdin, c.Stdout, c.Stderr = stdin, stdout, stderr
	return c.Run()
}
