package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/server"
	"github.com/pairbench/pairbench/state"
)

// serveOptions are the flags of pairbench serve.
type serveOptions struct {
	Addr            string
	SecretEnv       string
	AppID           int64
	PrivateKeyFile  string
	TokenEnv        string
	APIURL          string
	Store           string
	Dispatch        string
	Workflow        string
	Pairs           int
	Model           string
	Workers         int
	ShutdownTimeout time.Duration
	LogFormat       string
	// StateDir holds the embedded SQLite state; PostgresEnv, if set, names
	// the variable holding a Postgres URL to use instead.
	StateDir    string
	PostgresEnv string
	ReplicaID   string
	PublicURL   string
	RunTimeout  time.Duration
	// GitURL is the clone URL template of a registry for the local backend:
	// {owner} and {repo} are replaced.
	GitURL string
	// Bench is the template of a local bench.
	Bench benchOptions
}

// serveSecrets are what serve reads from the environment and files, never
// from flags.
type serveSecrets struct {
	webhook    []byte
	privateKey []byte // GitHub App
	token      string // or a plain token
	postgres   string // the Postgres URL, which holds a password
}

// check validates the flags together and reads the secrets they name.
func (o *serveOptions) check(getenv func(string) string, readFile func(string) ([]byte, error)) (serveSecrets, error) {
	var s serveSecrets
	switch {
	case o.SecretEnv == "":
		return s, errors.New("--webhook-secret-env: name the environment variable holding the webhook secret")
	case getenv(o.SecretEnv) == "":
		return s, fmt.Errorf("$%s is empty: the server refuses to run without a webhook secret", o.SecretEnv)
	case o.Store == "":
		return s, errors.New("--store: give the artifact store the benches upload to (a directory or s3://bucket/prefix)")
	case o.Dispatch != "actions" && o.Dispatch != "local":
		return s, fmt.Errorf("--dispatch %q: want local or actions", o.Dispatch)
	case o.Pairs < 0:
		return s, fmt.Errorf("--pairs %d: want 0 (the backend's default) or more", o.Pairs)
	case o.Workers < 1:
		return s, fmt.Errorf("--workers %d: want at least 1", o.Workers)
	case o.ShutdownTimeout <= 0:
		return s, fmt.Errorf("--shutdown-timeout %v: want a positive duration", o.ShutdownTimeout)
	case o.RunTimeout <= 0:
		return s, fmt.Errorf("--run-timeout %v: want a positive duration", o.RunTimeout)
	case o.PostgresEnv == "" && o.StateDir == "":
		return s, errors.New("--state-dir: give the directory of the service's state (or --postgres-env)")
	case o.ReplicaID == "":
		return s, errors.New("--replica-id: give this replica a name (the host name, by default)")
	case o.PublicURL != "" && !strings.HasPrefix(o.PublicURL, "https://") && !strings.HasPrefix(o.PublicURL, "http://"):
		return s, fmt.Errorf("--public-url %q: want the service's http(s):// address", o.PublicURL)
	}
	s.webhook = []byte(getenv(o.SecretEnv))
	if o.PostgresEnv != "" {
		if s.postgres = getenv(o.PostgresEnv); s.postgres == "" {
			return s, fmt.Errorf("$%s is empty: set it to the postgres:// URL of the service's database", o.PostgresEnv)
		}
	}

	app := o.AppID != 0 || o.PrivateKeyFile != ""
	switch {
	case app && o.TokenEnv != "":
		return s, errors.New("give either --app-id with --private-key-file (a GitHub App) or --token-env (a plain token), not both")
	case app && (o.AppID <= 0 || o.PrivateKeyFile == ""):
		return s, errors.New("a GitHub App needs both --app-id and --private-key-file")
	case app:
		key, err := readFile(o.PrivateKeyFile)
		if err != nil {
			return s, fmt.Errorf("--private-key-file: %w", err)
		}
		s.privateKey = key
	case o.TokenEnv != "":
		if s.token = getenv(o.TokenEnv); s.token == "" {
			return s, fmt.Errorf("$%s is empty", o.TokenEnv)
		}
	default:
		return s, errors.New("give --app-id with --private-key-file (a GitHub App) or --token-env (a plain token)")
	}
	return s, nil
}

func newServeCmd() *cobra.Command {
	o := serveOptions{
		Addr:            "127.0.0.1:8080",
		SecretEnv:       "PAIRBENCH_WEBHOOK_SECRET",
		APIURL:          os.Getenv("GITHUB_API_URL"),
		Dispatch:        "local",
		GitURL:          "https://github.com/{owner}/{repo}.git",
		Bench:           defaultBenchOptions(),
		Workflow:        bot.DefaultWorkflow,
		Workers:         8,
		ShutdownTimeout: 30 * time.Second,
		LogFormat:       "text",
		StateDir:        "pairbench-state",
		ReplicaID:       hostname(),
		RunTimeout:      6 * time.Hour,
	}
	cmd := &cobra.Command{
		Use:   "serve --store LOCATION (--app-id N --private-key-file KEY | --token-env NAME)",
		Short: "Run the GitHub App webhook service: bench pull requests and post the verdicts",
		Long: `serve runs pairbench's GitHub App service. It answers GitHub's webhook
deliveries on POST /webhook (signed with the webhook secret; others are
refused), hands them to the bot, which plans benches for pull requests that
change domain tools and for /bench comments, dispatches them, and posts each
verdict as a check run, a sticky comment and a "bench: <label>" label.
GET /healthz and GET /metrics (Prometheus) are served on the same address.

Secrets never go on the command line: the webhook secret is read from the
environment variable named by --webhook-secret-env (default
PAIRBENCH_WEBHOOK_SECRET), the App's private key from --private-key-file,
and a plain token, if used instead of an App, from the variable named by
--token-env. The server refuses to start without a webhook secret.

Benches run on this host by default (--dispatch local): one at a time, with
the registry read at the pull request's head commit from --git-url through a
bare cache, and the bench flags below. With --dispatch actions they run on
GitHub Actions instead: a workflow_dispatch of --workflow on the registry's
default branch. Either way the runs upload to --store (see docs/artifacts.md),
where the service reads each report.json when the bench ends; S3 credentials
come from the usual AWS environment variables.

With --public-url, comments link each report through the service (GET
/runs/<run id>/report), which checks the link and presigns at click time.
With a plain token (--token-env) the service posts commit statuses instead of
check runs (only GitHub Apps may write check runs).

Nothing is lost: a delivery is answered 2xx only once it is committed to the
service's state with the job that will handle it, and every GitHub write is a
job of its own, retried with backoff, waiting out rate limits. The state is
one SQLite file under --state-dir (the default; one process at a time), or a
PostgreSQL database shared by several replicas (--postgres-env names the
variable holding its URL). After a crash or kill -9 the restarted service
carries on where it was; a local bench resumes by its run id.

On SIGINT or SIGTERM the service stops accepting connections and stops its
jobs within --shutdown-timeout (a local bench goes back in the queue and
resumes at the next start; other jobs cut short run again) and exits.

Examples:
  PAIRBENCH_WEBHOOK_SECRET=... pairbench serve --addr 127.0.0.1:8080 \
      --app-id 123456 --private-key-file /etc/pairbench/app.pem \
      --store s3://bench-artifacts/runs?region=eu-west-1
  PAIRBENCH_WEBHOOK_SECRET=... GITHUB_TOKEN=... pairbench serve \
      --token-env GITHUB_TOKEN --store /var/lib/pairbench/runs --log-format json
  PAIRBENCH_WEBHOOK_SECRET=... PAIRBENCH_POSTGRES_URL=postgres://... pairbench serve \
      --postgres-env PAIRBENCH_POSTGRES_URL --dispatch actions --app-id 123456 \
      --private-key-file app.pem --store s3://bench-artifacts/runs \
      --public-url https://bench.example.com`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			secrets, err := o.check(os.Getenv, os.ReadFile)
			if err != nil {
				return usageError{err}
			}
			if err := o.Bench.finish(""); err != nil {
				return usageError{err}
			}
			log, err := newLogger(cmd.ErrOrStderr(), o.LogFormat)
			if err != nil {
				return usageError{err}
			}
			l, err := net.Listen("tcp", o.Addr)
			if err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			return runServe(cmd.Context(), o, secrets, l, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Addr, "addr", o.Addr, "address to listen on")
	f.StringVar(&o.SecretEnv, "webhook-secret-env", o.SecretEnv, "environment variable holding the webhook secret")
	f.Int64Var(&o.AppID, "app-id", 0, "GitHub App id")
	f.StringVar(&o.PrivateKeyFile, "private-key-file", "", "GitHub App private key (PEM)")
	f.StringVar(&o.TokenEnv, "token-env", "", "environment variable holding a plain GitHub token, instead of an App")
	f.StringVar(&o.APIURL, "api-url", o.APIURL, "GitHub REST API root (default $GITHUB_API_URL, else https://api.github.com)")
	f.StringVar(&o.Store, "store", "", "artifact store the benches upload to: a directory or s3://bucket/prefix (see docs/artifacts.md)")
	f.StringVar(&o.Dispatch, "dispatch", o.Dispatch, "where benches run: local (this host) or actions (self-hosted runners)")
	f.StringVar(&o.GitURL, "git-url", o.GitURL, "local backend: clone URL of a registry, {owner} and {repo} replaced")
	f.IntVar(&o.Bench.Slots, "slots", o.Bench.Slots, "local backend: jobs run at once")
	f.StringVar(&o.Bench.RunsDir, "runs-dir", filepath.Join("runs", "serve"), "local backend: directory holding run directories")
	f.StringVar(&o.Bench.Tools, "tools", "", "local backend: node_modules directory of the pinned Node tools")
	f.DurationVar(&o.Bench.StartDelay, "start-delay", o.Bench.StartDelay, "local backend: start delay after page load, in both arms")
	f.StringVar(&o.Bench.TempDir, "temp-dir", "", "local backend: directory for per-trial sandbox, egress and browser profile directories (default: $TMPDIR or /tmp)")
	f.BoolVar(&o.Bench.ExampleSites, "example-sites", false, "local backend: serve pairbench's example sites on loopback (for the example registry)")
	f.StringVar(&o.Workflow, "workflow", o.Workflow, "the registry's workflow file dispatched for a bench")
	f.IntVar(&o.Pairs, "pairs", 0, "pairs per intent for a bench that does not ask (0: the backend's default, 10 for local)")
	f.StringVar(&o.Model, "model", "", "model for a bench that does not ask: scripted or provider/id (empty: the backend's default, scripted for local)")
	f.IntVar(&o.Workers, "workers", o.Workers, "jobs (deliveries, GitHub writes) run at once by this replica")
	f.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", o.ShutdownTimeout, "how long a shutdown may take; jobs cut short run again at the next start")
	f.StringVar(&o.StateDir, "state-dir", o.StateDir, "directory of the service's state (an SQLite database; back it up, see docs/serve.md)")
	f.StringVar(&o.PostgresEnv, "postgres-env", "", "environment variable holding a postgres:// URL: keep the state in PostgreSQL instead, shared by replicas")
	f.StringVar(&o.ReplicaID, "replica-id", o.ReplicaID, "this replica's name, stable across restarts and unique among replicas")
	f.StringVar(&o.PublicURL, "public-url", "", "the service's public https:// address, for report links in comments (empty: no links)")
	f.DurationVar(&o.RunTimeout, "run-timeout", o.RunTimeout, "a bench not finished this long after it was started is failed as vanished")
	f.StringVar(&o.LogFormat, "log-format", o.LogFormat, "log format: text or json")
	return cmd
}

// hostname is the default replica id.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "pairbench"
	}
	return h
}

// runServe wires the store, the GitHub clients, the backend, the bot and
// the webhook server, serves on l until ctx ends, then shuts down within
// o.ShutdownTimeout.
func runServe(ctx context.Context, o serveOptions, secrets serveSecrets, l net.Listener, log *slog.Logger) error {
	defer l.Close()
	store, err := artifacts.Open(ctx, o.Store)
	if err != nil {
		return usageError{fmt.Errorf("--store: %w", err)}
	}
	if c, ok := store.(interface{ Check(context.Context) error }); ok {
		if err := c.Check(ctx); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}

	metrics := server.NewMetrics()
	transport := &githubMetrics{base: http.DefaultTransport, metrics: metrics}
	var clients bot.Clients
	if secrets.privateKey != nil {
		clients, err = bot.NewAppClients(o.AppID, secrets.privateKey, o.APIURL, transport)
	} else {
		clients, err = bot.NewTokenClients(secrets.token, o.APIURL, transport)
	}
	if err != nil {
		return usageError{fmt.Errorf("serve: %w", err)}
	}
	cfg := bot.Config{
		Clients:        clients,
		State:          state.Config{Dir: o.StateDir, PostgresURL: secrets.postgres, ReplicaID: o.ReplicaID, GitHubWorkers: o.Workers},
		Store:          store,
		Backend:        o.Dispatch,
		Workflow:       o.Workflow,
		CommitStatuses: secrets.privateKey == nil,
		PublicURL:      o.PublicURL,
		LinkKey:        linkKey(secrets.webhook),
		Pairs:          o.Pairs,
		Model:          o.Model,
		RunTimeout:     o.RunTimeout,
		Metrics:        metrics,
		Logger:         log,
	}
	if secrets.postgres != "" {
		cfg.State.Dir = ""
	}
	if o.Dispatch == bot.BackendLocal {
		bench := o.Bench
		bench.Store = o.Store
		if o.Pairs > 0 {
			bench.Pairs = o.Pairs
		}
		if o.Model != "" {
			bench.Model = o.Model
		}
		cfg.Runner = &localRunner{template: bench.Config, gitURL: o.GitURL, log: log}
	}
	b, err := bot.Open(ctx, cfg)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer b.Close()
	srv, err := server.New(server.Config{
		Secret: secrets.webhook,
		Inbox: server.InboxFunc(func(ctx context.Context, d server.Delivery) (bool, error) {
			return b.Accept(ctx, bot.Delivery(d))
		}),
		Events:  bot.Events(),
		Reports: b.ReportHandler(),
		Logger:  log,
		Metrics: metrics,
	})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if err := b.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("state", "dialect", b.State().Dialect(), "replica", o.ReplicaID)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("stopping", "cause", context.Cause(ctx))
	case serveErr = <-served: // the listener failed
	}
	// The whole shutdown fits in --shutdown-timeout: the HTTP side first,
	// then the jobs, which are cancelled when the time is nearly up and run
	// again at the next start.
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.ShutdownTimeout)
	defer cancel()
	shutdownErr := srv.Shutdown(shutdownCtx)
	deadline, _ := shutdownCtx.Deadline()
	soft, cancelSoft := context.WithDeadline(shutdownCtx, deadline.Add(-min(2*time.Second, o.ShutdownTimeout/4)))
	defer cancelSoft()
	if err := b.Stop(soft, shutdownCtx); err != nil {
		log.Warn("jobs cut short by the shutdown; they run again at the next start", "err", err)
	}
	select {
	case err := <-served: // Serve returned because of Shutdown
		serveErr = err
	default:
	}
	return errors.Join(serveErr, shutdownErr)
}

// linkKey derives the key that signs report links from the webhook
// secret, so rotating the secret revokes every link.
func linkKey(secret []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("pairbench report links"))
	return mac.Sum(nil)
}

// githubMetrics counts the GitHub REST calls that go through it, by method
// and status.
type githubMetrics struct {
	base    http.RoundTripper
	metrics *server.Metrics
}

func (g *githubMetrics) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		g.metrics.GitHubCall(req.Method, 0)
		return resp, err
	}
	g.metrics.GitHubCall(req.Method, resp.StatusCode)
	return resp, nil
}

// InstallationTransport records, around rt, the rate limit GitHub reports
// left for installation id (bot.AppClients uses it).
func (g *githubMetrics) InstallationTransport(id int64, rt http.RoundTripper) http.RoundTripper {
	return rateLimitWatch{rt: rt, id: id, metrics: g.metrics}
}

type rateLimitWatch struct {
	rt      http.RoundTripper
	id      int64
	metrics *server.Metrics
}

func (w rateLimitWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.rt.RoundTrip(req)
	if err == nil {
		if n, err := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining")); err == nil {
			w.metrics.SetRateLimitRemaining(w.id, n)
		}
	}
	return resp, err
}
