package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/server"
	"github.com/pairbench/pairbench/state"
)

// A SettingError is a setting the service cannot start with (a store
// location it cannot open, a private key that is not one): the operator's
// to fix, not a failure of the moment.
type SettingError struct{ Err error }

func (e *SettingError) Error() string { return e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// Run wires the store, the GitHub clients, the backend, the bot and the
// webhook server, serves on l until ctx ends, then shuts down within
// o.ShutdownTimeout. o is checked (Options.Check) and s what it read.
func Run(ctx context.Context, o Options, s Secrets, l net.Listener, log *slog.Logger) error {
	defer l.Close()
	store, err := OpenStore(ctx, o.Store)
	if err != nil {
		return err
	}
	metrics := server.NewMetrics()
	transport := &GitHubMetrics{Base: http.DefaultTransport, Metrics: metrics}
	var clients bot.Clients
	if s.PrivateKey != nil {
		clients, err = bot.NewAppClients(o.AppID, s.PrivateKey, o.APIURL, transport)
	} else {
		clients, err = bot.NewTokenClients(s.Token, o.APIURL, transport)
	}
	if err != nil {
		return &SettingError{fmt.Errorf("serve: %w", err)}
	}
	cfg := bot.Config{
		Clients:        clients,
		State:          state.Config{Dir: o.StateDir, PostgresURL: s.Postgres, ReplicaID: o.ReplicaID, GitHubWorkers: o.Workers},
		Store:          store,
		Backend:        o.Dispatch,
		Workflow:       o.Workflow,
		CommitStatuses: s.PrivateKey == nil,
		PublicURL:      o.PublicURL,
		LinkKey:        bot.LinkKey(s.Webhook),
		Pairs:          o.Pairs,
		Model:          o.Model,
		RunTimeout:     o.RunTimeout,
		QueueTimeout:   o.QueueTimeout,
		Metrics:        metrics,
		Logger:         log,
	}
	if s.Postgres != "" {
		cfg.State.Dir = ""
	}
	if o.Dispatch == bot.BackendLocal {
		cfg.Runner = NewLocalRunner(o, log)
	} else {
		// A registry with problems fails before a runner is taken, and its
		// problems reach the comment, as a local bench's do.
		cfg.CheckRegistry = func(tree fs.FS, commit string) error {
			_, err := bench.LoadGitRegistry(tree, ".", commit, time.Now())
			return err
		}
	}
	b, err := bot.Open(ctx, cfg)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer b.Close()
	srv, err := server.New(server.Config{
		Secret: s.Webhook,
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
	// The whole shutdown fits in o.ShutdownTimeout: the HTTP side first,
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

// OpenStore opens the artifact store at location and, for a store that
// can, checks that it is there (a bucket that does not exist fails here,
// before the service listens).
func OpenStore(ctx context.Context, location string) (artifacts.Store, error) {
	store, err := artifacts.Open(ctx, location)
	if err != nil {
		return nil, &SettingError{fmt.Errorf("--store: %w", err)}
	}
	if c, ok := store.(interface{ Check(context.Context) error }); ok {
		if err := c.Check(ctx); err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
	}
	return store, nil
}
