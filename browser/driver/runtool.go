package driver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/pairbench/pairbench/browser/internal/cdpconn"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner/webmcp"
)

// RunTool runs tool's execute once with args (a JSON object) on the current
// page's main frame, in an isolated world made for the call: it shares the
// page's DOM, origin and cookies, but nothing is registered and nothing of
// the tool stays where the page or its WebMCP could see it: the signed-in
// check, the same in both arms. A tool that threw is reported in Result.Exception with a nil error.
func (b *Browser) RunTool(ctx context.Context, tool intents.Tool, args json.RawMessage) (webmcp.Result, error) {
	t, err := b.current(ctx)
	if err != nil {
		return webmcp.Result{}, err
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if !json.Valid(args) {
		return webmcp.Result{}, fmt.Errorf("run %s: the arguments are not JSON", tool.Name)
	}
	world, err := cdpconn.Send(ctx, b.conn, t.session, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{
		FrameID: cdp.FrameID(t.id), WorldName: "pairbench-run-" + randomHex(4),
	})
	if err != nil {
		return webmcp.Result{}, fmt.Errorf("run %s: %w", tool.Name, err)
	}
	// The tool file's page form returns the tool (intents.Tool.Function).
	expr := `(async () => {
  try {
    const tool = (` + tool.Function + `)();
    const out = await tool.execute(` + string(args) + `);
    return JSON.stringify({text: typeof out === "string" ? out : JSON.stringify(out)});
  } catch (e) {
    return JSON.stringify({exception: String(e && e.message || e)});
  }
})()`
	res, err := cdpconn.Send(ctx, b.conn, t.session, runtime.Evaluate, runtime.EvaluateParams{
		Expression: expr, ContextID: world.ExecutionContextID, ReturnByValue: ptr(true), AwaitPromise: ptr(true),
	})
	if err != nil {
		return webmcp.Result{}, fmt.Errorf("run %s: %w", tool.Name, err)
	}
	if d := res.ExceptionDetails; d != nil {
		return webmcp.Result{Exception: d.Text}, nil
	}
	var text string
	if res.Result == nil || json.Unmarshal(res.Result.Value, &text) != nil {
		return webmcp.Result{}, fmt.Errorf("run %s: the page returned no text", tool.Name)
	}
	var out struct{ Text, Exception string }
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return webmcp.Result{}, fmt.Errorf("run %s: %w", tool.Name, err)
	}
	return webmcp.Result{Text: out.Text, Exception: out.Exception}, nil
}
