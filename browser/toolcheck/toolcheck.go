// Package toolcheck registers tool files in a real browser and checks, page
// by page, that what is live there is what the registry says: every tool
// whose URL patterns match the page is live as a registered tool, every
// other tool is absent, and none failed to register. A tool that failed is
// reported with its file, the line and the browser's own message.
//
// It is the treatment half of run's smoke gate (ForPlan: every domain and
// every entry tool of a plan, before any pair is spent) and of `pairbench
// validate --browser` (ForRegistry: every tool file on each of its URL
// patterns, and every intent's start page).
package toolcheck

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/runner/webmcp"
)

// A Set is tool files registered together in one browser, and the pages to
// check them on.
type Set struct {
	Browser runner.BrowserSpec
	// Domains names the domains whose tools the set holds.
	Domains []string
	Tools   []intents.Tool
	Pages   []Page
}

// Page is a URL to load and check.
type Page struct {
	URL string
	// Entry, when set, must be live there (an intent's entry tool).
	Entry string
	// For says why the page is checked ("intent books-cheapest-poetry").
	For string
	// Pos is where in the registry the page comes from (the intent's file
	// or the tool file), for a problem with the page itself.
	Pos intents.Pos
}

// Problem is one thing wrong on a page.
type Problem struct {
	Page Page
	// Tool is the tool at fault, nil when it is the page (it did not load).
	Tool *intents.Tool
	// Line is the line of Tool's file the browser's message points at, 0
	// when unknown.
	Line int
	Msg  string
}

// String reads "tool list_genre (domains/books.example/tools/list_genre.js:3)
// on http://books.example/ (intent books-cheapest-poetry): did not register:
// SyntaxError: ...".
func (p Problem) String() string {
	var b strings.Builder
	if p.Tool != nil {
		b.WriteString("tool " + p.Tool.Name)
		if file := cmp.Or(p.Tool.Path, p.Tool.File); file != "" {
			if p.Line > 0 {
				file = fmt.Sprintf("%s:%d", file, p.Line)
			}
			b.WriteString(" (" + file + ")")
		}
		b.WriteString(" on ")
	}
	b.WriteString(cmp.Or(p.Page.URL, "a page"))
	if p.Page.For != "" {
		b.WriteString(" (" + p.Page.For + ")")
	}
	return b.String() + ": " + p.Msg
}

// Registry returns p as a registry problem, at the tool file's line (the
// line the browser's message points at, else 1) or the page's origin:
// "list_genre.js:3: in Chromium on http://books.example/ (...): did not
// register: ...".
func (p Problem) Registry() intents.Problem {
	pos := p.Page.Pos
	if p.Tool != nil {
		pos = intents.Pos{File: p.Tool.File, Line: max(p.Line, 1)}
	}
	where := cmp.Or(p.Page.URL, "a page")
	if p.Page.For != "" {
		where += " (" + p.Page.For + ")"
	}
	msg := p.Msg
	if p.Tool != nil {
		msg = "tool " + p.Tool.Name + " " + msg
	}
	return intents.Problem{Pos: pos, Msg: "in Chromium on " + where + ": " + msg}
}

// Error is what Check found wrong, as one error.
type Error struct{ Problems []Problem }

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return fmt.Sprintf("%d %s with the registered tools:\n  %s", len(lines), plural(len(lines), "problem", "problems"),
		strings.Join(lines, "\n  "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Check opens one browser per set, registers the set's tools in it and loads
// each of its pages in turn, comparing what is live with the tools' URL
// patterns. What is wrong on a page is a Problem; the error is for a browser
// that could not be opened, given the tools or reached (or ctx ending).
func Check(ctx context.Context, browsers runner.Browsers, sets []Set) ([]Problem, error) {
	var out []Problem
	for _, set := range sets {
		ps, err := checkSet(ctx, browsers, set)
		out = append(out, ps...)
		if err != nil {
			return out, fmt.Errorf("the tools of %s: %w", strings.Join(set.Domains, ", "), err)
		}
	}
	return out, nil
}

func checkSet(ctx context.Context, browsers runner.Browsers, set Set) (_ []Problem, err error) {
	b, err := browsers.Open(ctx, set.Browser)
	if err != nil {
		return nil, fmt.Errorf("open a browser: %w", err)
	}
	defer func() {
		if cerr := b.Close(context.WithoutCancel(ctx)); err == nil && cerr != nil {
			err = fmt.Errorf("close the browser: %w", cerr)
		}
	}()
	if err := b.RegisterTools(ctx, set.Tools); err != nil {
		return nil, fmt.Errorf("register tools: %w", err)
	}
	// Each URL is loaded once, for all the pages that share it; a tool
	// that fails alike on several pages is reported once.
	var out []Problem
	var urls []string
	for _, p := range set.Pages {
		if !slices.Contains(urls, p.URL) {
			urls = append(urls, p.URL)
		}
	}
	for _, url := range urls {
		var pages []Page
		for _, p := range set.Pages {
			if p.URL == url {
				pages = append(pages, p)
			}
		}
		ps, err := checkPage(ctx, b, set.Tools, pages)
		if err != nil {
			return out, err
		}
		for _, p := range ps {
			if !slices.ContainsFunc(out, func(q Problem) bool { return q.Tool != nil && q.Tool == p.Tool && q.Msg == p.Msg }) {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// checkPage loads the pages' URL in b, which holds tools, and compares.
// Problems with the tools name the first page; an entry tool that is not
// live, the page that needs it.
func checkPage(ctx context.Context, b runner.Browser, tools []intents.Tool, pages []Page) ([]Problem, error) {
	page := pages[0]
	load, err := b.Load(ctx, page.URL)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return []Problem{{Page: page, Msg: "did not load: " + err.Error()}}, nil
	}
	live, err := b.LiveTools(ctx)
	if err != nil {
		return nil, fmt.Errorf("list live tools on %s: %w", load.URL, err)
	}
	failed, err := b.RegistrationFailures(ctx)
	if err != nil {
		return nil, fmt.Errorf("read registration failures on %s: %w", load.URL, err)
	}
	isLive := func(name string) bool {
		return slices.ContainsFunc(live, func(l webmcp.Tool) bool { return l.Name == name && l.Registered })
	}
	var out []Problem
	reported := map[string]bool{}
	for i := range tools {
		t := &tools[i]
		fi := slices.IndexFunc(failed, func(f pairbench.RegistrationFailure) bool { return f.Tool == t.Name && f.URL == load.URL })
		p := Problem{Page: page, Tool: t}
		switch {
		case fi >= 0:
			p.Line, p.Msg = failed[fi].Line, "did not register: "+failed[fi].Error
		case t.Matches(load.URL) && !isLive(t.Name):
			p.Msg = "is not live though its URL patterns match " + load.URL
		case !t.Matches(load.URL) && isLive(t.Name):
			p.Msg = "is live though its URL patterns do not match " + load.URL + " (the browser's URLPattern and pairbench's disagree)"
		default:
			continue
		}
		reported[t.Name] = true
		out = append(out, p)
	}
	for _, page := range pages {
		if page.Entry == "" || reported[page.Entry] || isLive(page.Entry) {
			continue
		}
		p := Problem{Page: page, Msg: fmt.Sprintf("entry tool %s is not live", page.Entry)}
		if i := slices.IndexFunc(tools, func(t intents.Tool) bool { return t.Name == page.Entry }); i >= 0 {
			p.Tool, p.Msg = &tools[i], "is the entry tool and is not live (its URL patterns do not match "+load.URL+")"
		}
		reported[page.Entry] = true
		out = append(out, p)
	}
	return out, nil
}
