package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/browser/internal/cdpconn"
)

// pageStateScript reads the page in an isolated world: the DOM is the
// page's, the JavaScript globals and prototypes are not, so a page that
// redefines querySelector or innerText cannot change what is read. %s is
// the selectors (a JSON array), %d the longest page text and element text
// kept (in UTF-16 units; Go cuts again in bytes).
const pageStateScript = `(() => {
  const norm = (s) => String(s || "").replace(/\s+/g, " ").trim();
  const text = (e, max) => norm(e.innerText !== undefined ? e.innerText : e.textContent).slice(0, max);
  const elements = %s.map((selector) => {
    try {
      const e = document.querySelector(selector);
      if (!e) return {selector, found: false};
      const hasValue = "value" in e && typeof e.value === "string";
      return {selector, found: true, text: text(e, %[3]d), value: hasValue ? e.value.slice(0, %[3]d) : "", has_value: hasValue};
    } catch (err) {
      return {selector, found: false, error: String(err && err.message || err)};
    }
  });
  return JSON.stringify({url: location.href, title: document.title.slice(0, 1000),
    text: document.body ? text(document.body, %[2]d) : "", elements});
})()`

// PageState reads the current page (the tab opened last that is still
// open): its URL, title, visible text and, for each selector, its first
// match's text and value. It reads from an isolated world, so the page's
// scripts cannot fake what it reads.
func (b *Browser) PageState(ctx context.Context, selectors []string) (pairbench.PageState, error) {
	var st pairbench.PageState
	t, err := b.current(ctx)
	if err != nil {
		return st, err
	}
	if selectors == nil {
		selectors = []string{}
	}
	sel, err := json.Marshal(selectors)
	if err != nil {
		return st, fmt.Errorf("read the page: %w", err)
	}
	world, err := cdpconn.Send(ctx, b.conn, t.session, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{
		FrameID: cdp.FrameID(t.id), WorldName: "pairbench-state-" + randomHex(4),
	})
	if err != nil {
		return st, fmt.Errorf("read the page: %w", err)
	}
	res, err := cdpconn.Send(ctx, b.conn, t.session, runtime.Evaluate, runtime.EvaluateParams{
		Expression: fmt.Sprintf(pageStateScript, sel, pairbench.MaxPageText, pairbench.MaxElementText),
		ContextID:  world.ExecutionContextID, ReturnByValue: ptr(true),
	})
	if err != nil {
		return st, fmt.Errorf("read the page: %w", err)
	}
	if d := res.ExceptionDetails; d != nil {
		return st, fmt.Errorf("read the page: it threw: %s", d.Text)
	}
	var text string
	if res.Result == nil || json.Unmarshal(res.Result.Value, &text) != nil {
		return st, errors.New("read the page: no value")
	}
	if err := json.Unmarshal([]byte(text), &st); err != nil {
		return st, fmt.Errorf("read the page: %w", err)
	}
	st.Text = cut(st.Text, pairbench.MaxPageText)
	for i := range st.Elements {
		st.Elements[i].Text = cut(st.Elements[i].Text, pairbench.MaxElementText)
		st.Elements[i].Value = cut(st.Elements[i].Value, pairbench.MaxElementText)
	}
	return st, nil
}

// cut shortens s to at most n bytes, at a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return strings.TrimSpace(s)
}
