package runner

import (
	"slices"
	"strings"

	"github.com/pairbench/pairbench/rundir"
)

// PricesVersion names the price table below; run.json records it, so a
// run's costs can be checked against the prices they were computed with. A
// change to any price is a new version.
const PricesVersion = "pairbench-prices-2025-11"

// Price is what a model's tokens cost, in USD per million tokens.
type Price struct {
	Input, Output float64
	// CacheRead and CacheWrite price input tokens read from and written to
	// the provider's prompt cache.
	CacheRead, CacheWrite float64
}

// Usage is the tokens one model call (or a sum of calls) used. Input counts
// the input tokens not read from or written to the cache.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int64
}

// Add returns u plus v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.Input + v.Input, u.Output + v.Output, u.CacheRead + v.CacheRead, u.CacheWrite + v.CacheWrite}
}

// Cost is what u costs at p, in USD.
func (p Price) Cost(u Usage) float64 {
	return (float64(u.Input)*p.Input + float64(u.Output)*p.Output +
		float64(u.CacheRead)*p.CacheRead + float64(u.CacheWrite)*p.CacheWrite) / 1e6
}

// prices are the providers' published list prices (standard tier, USD per
// million tokens) as of November 2025, for the models Claude Code and Codex
// are run with, which report no cost of their own (Codex) or only one at
// the end of a run (Claude Code). Anthropic bills cache reads at 0.1× and
// 5-minute cache writes at 1.25× the input price; OpenAI bills cached
// input at the listed cached price and has no write charge. A model id
// matches the longest entry it starts with, so dated ids
// (claude-sonnet-4-5-20250929) find their family.
var prices = map[string]map[string]Price{
	"anthropic": {
		"claude-opus-4-5":   {5, 25, 0.5, 6.25},
		"claude-opus-4-1":   {15, 75, 1.5, 18.75},
		"claude-opus-4":     {15, 75, 1.5, 18.75},
		"claude-sonnet-4-5": {3, 15, 0.3, 3.75},
		"claude-sonnet-4":   {3, 15, 0.3, 3.75},
		"claude-3-7-sonnet": {3, 15, 0.3, 3.75},
		"claude-haiku-4-5":  {1, 5, 0.1, 1.25},
		"claude-3-5-haiku":  {0.8, 4, 0.08, 1},
	},
	"openai": {
		"gpt-5.1":            {1.25, 10, 0.125, 0},
		"gpt-5.1-codex":      {1.25, 10, 0.125, 0},
		"gpt-5.1-codex-mini": {0.25, 2, 0.025, 0},
		"gpt-5":              {1.25, 10, 0.125, 0},
		"gpt-5-codex":        {1.25, 10, 0.125, 0},
		"gpt-5-mini":         {0.25, 2, 0.025, 0},
		"gpt-5-nano":         {0.05, 0.4, 0.005, 0},
		"gpt-4.1":            {2, 8, 0.5, 0},
		"gpt-4.1-mini":       {0.4, 1.6, 0.1, 0},
		"o3":                 {2, 8, 0.5, 0},
		"o4-mini":            {1.1, 4.4, 0.275, 0},
	},
}

// PriceOf returns what m's tokens cost: m's own prices when it names them
// (the scripted model, or a model given prices), else the table's entry for
// its provider and id. ok is false for a model the table does not know.
func PriceOf(m rundir.Model) (p Price, ok bool) {
	if m.InputPrice > 0 || m.OutputPrice > 0 {
		return Price{Input: m.InputPrice, Output: m.OutputPrice, CacheRead: m.InputPrice, CacheWrite: m.InputPrice}, true
	}
	table := prices[m.Provider]
	names := make([]string, 0, len(table))
	for name := range table {
		names = append(names, name)
	}
	// Longest first, so gpt-5-mini is not read as gpt-5.
	slices.SortFunc(names, func(a, b string) int { return len(b) - len(a) })
	for _, name := range names {
		if m.ID == name || strings.HasPrefix(m.ID, name+"-") {
			return table[name], true
		}
	}
	return Price{}, false
}
