package local

import (
	"context"

	"github.com/pairbench/pairbench/runner"
)

var _ runner.ProfileChecker = (*Provider)(nil)

// HasProfile is false for every name: local browsers always start from an
// empty profile (a signed-in domain needs a cloud browser). It implements
// runner.ProfileChecker.
func (p *Provider) HasProfile(context.Context, string) (bool, error) { return false, nil }
