package local

import "context"

// HasProfile is false for every name: local browsers always start from an
// empty profile (a signed-in domain needs a cloud browser).
func (p *Provider) HasProfile(context.Context, string) (bool, error) { return false, nil }
