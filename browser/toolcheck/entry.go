package toolcheck

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
)

// Treatment is the smoke gate's treatment setup: it checks every domain and
// every entry tool of a plan (ForPlan) in as few browsers as the domains
// allow, and returns an *Error listing every problem, so that no pair is
// spent on a domain whose tools cannot register.
func Treatment(ctx context.Context, log *slog.Logger, browsers runner.Browsers, tis []*runner.TrialIntent) error {
	sets := ForPlan(tis)
	problems, err := Check(ctx, browsers, sets)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return &Error{Problems: problems}
	}
	var urls []string
	for _, s := range sets {
		for _, p := range s.Pages {
			if !slices.Contains(urls, p.URL) {
				urls = append(urls, p.URL)
			}
		}
	}
	log.Info("smoke gate: every intent's entry tool is live on its start page, and no registered tool failed to register there",
		"intents", len(tis), "start_pages", len(urls), "browsers", len(sets))
	return nil
}

// RegistryResult is what CheckRegistry did.
type RegistryResult struct {
	Problems []Problem
	// Pages and Browsers count the pages loaded and the browsers opened.
	Pages, Browsers int
}

// CheckRegistry registers every tool file of reg in local Chromium and loads
// an example URL of each of its patterns and each intent's start URL
// (ForRegistry), every one served by a blank stub page under StubCSP (the
// real sites are never contacted). cfg configures the provider; its Hosts
// and the certificate flag the stub needs are set here.
func CheckRegistry(ctx context.Context, reg *intents.Registry, cfg local.Config) (*RegistryResult, error) {
	sets, problems := ForRegistry(reg)
	res := &RegistryResult{Problems: problems, Browsers: len(sets)}
	for _, s := range sets {
		res.Pages += len(s.Pages)
	}
	if len(sets) == 0 {
		return res, nil
	}
	stub, err := StartStub()
	if err != nil {
		return nil, fmt.Errorf("stub pages: %w", err)
	}
	defer stub.Close()
	cfg.Hosts = map[string]string{}
	for _, h := range Hosts(sets) {
		cfg.Hosts[h] = stub.Addr()
	}
	cfg.Flags = append(cfg.Flags, "--ignore-certificate-errors")
	cfg.Spares = 0
	browsers, err := local.New(cfg)
	if err != nil {
		return nil, err
	}
	found, err := Check(ctx, browsers, sets)
	res.Problems = append(res.Problems, found...)
	return res, err
}
