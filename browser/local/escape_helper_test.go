package local

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/io"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp/remote"
	"github.com/pairbench/pairbench/browser/internal/cdpconn"
	"github.com/pairbench/pairbench/browser/internal/testsite"
)

// attackArg makes the test binary (see TestMain) a raw CDP client, run
// inside an agent's sandbox the way a hostile agent would run its own code:
// not Playwright MCP, just the DevTools protocol on the endpoint the agent
// was handed. It reads an attackPlan (JSON) from its argument, prints an
// attackResult (JSON) and exits 0; it exits 2 when it cannot even connect.
const attackArg = "__browser-attack"

// attackPlan is what the hostile agent tries.
type attackPlan struct {
	CDP string `json:"cdp"` // the DevTools endpoint as the agent was handed it
	// Navigate are URLs opened in a new tab, one after the other; the text
	// of each resulting page is reported.
	Navigate []string `json:"navigate"`
	// NewTargets are URLs opened directly as new tabs (Target.createTarget).
	NewTargets []string `json:"new_targets"`
	// Resources are URLs read with Network.loadNetworkResource (the way
	// DevTools fetches source maps), from a tab on Origin.
	Resources []string `json:"resources"`
	Origin    string   `json:"origin"`
	// DownloadURL is fetched after downloads were allowed into each of
	// DownloadDirs, once per directory.
	DownloadURL  string   `json:"download_url"`
	DownloadDirs []string `json:"download_dirs"`
}

// attackPage is what one navigation gave the attacker.
type attackPage struct {
	URL   string `json:"url"`
	Error string `json:"error,omitempty"` // the navigation's or the protocol's error
	Text  string `json:"text,omitempty"`  // the page's text
}

type attackResult struct {
	Pages     []attackPage `json:"pages"`
	Downloads []string     `json:"downloads"` // what each download attempt reported
}

func runAttack(args []string) int {
	var plan attackPlan
	if len(args) != 1 || json.Unmarshal([]byte(args[0]), &plan) != nil {
		fmt.Fprintln(os.Stderr, "usage: __browser-attack PLAN_JSON")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*testsite.Patience) // about 40 tabs, each a renderer to start
	defer cancel()
	events := make(chan *cdproto.Message, 1024)
	ws, err := browserWebSocket(ctx, plan.CDP)
	if err != nil {
		fmt.Fprintln(os.Stderr, "discover:", err)
		return 2
	}
	tr, err := remote.DialContext(ctx, ws)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		return 2
	}
	c := cdpconn.New(tr, func(m *cdproto.Message) {
		select {
		case events <- m:
		default:
		}
	})
	defer c.Close()

	var res attackResult
	for _, u := range plan.Navigate {
		res.Pages = append(res.Pages, navigateAndRead(ctx, c, u, false))
	}
	for _, u := range plan.NewTargets {
		res.Pages = append(res.Pages, navigateAndRead(ctx, c, u, true))
	}
	for _, u := range plan.Resources {
		res.Pages = append(res.Pages, loadResource(ctx, c, plan.Origin, u))
	}
	for _, dir := range plan.DownloadDirs {
		res.Downloads = append(res.Downloads, dir+": "+download(ctx, c, events, plan.DownloadURL, dir))
	}
	json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

// browserWebSocket returns the browser's websocket URL: endpoint itself,
// or what an http endpoint's /json/version names.
func browserWebSocket(ctx context.Context, endpoint string) (string, error) {
	if strings.HasPrefix(endpoint, "ws://") {
		return endpoint, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/json/version", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var v struct {
		URL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return "", err
	}
	return v.URL, nil
}

// navigateAndRead opens a tab, navigates it to u (or creates it on u) and
// returns the page's text once it settled.
func navigateAndRead(ctx context.Context, c *cdpconn.Conn, u string, direct bool) attackPage {
	p := attackPage{URL: u}
	ctx, cancel := context.WithTimeout(ctx, testsite.Patience)
	defer cancel()
	first := "about:blank"
	if direct {
		first = u
	}
	created, err := cdpconn.Send(ctx, c, "", target.CreateTarget, target.CreateTargetParams{URL: first})
	if err != nil {
		p.Error = err.Error()
		return p
	}
	defer cdpconn.Send(context.WithoutCancel(ctx), c, "", target.CloseTarget, target.CloseTargetParams{TargetID: created.TargetID})
	session, err := cdpconn.Send(ctx, c, "", target.AttachToTarget, target.AttachToTargetParams{TargetID: created.TargetID, Flatten: ptr(true)})
	if err != nil {
		p.Error = err.Error()
		return p
	}
	s := session.SessionID
	if !direct {
		nav, err := cdpconn.Send(ctx, c, s, page.Navigate, page.NavigateParams{URL: u})
		if err != nil {
			p.Error = err.Error()
			return p
		}
		p.Error = nav.ErrorText
	}
	// Let the page (or its error page) settle, then read it. A tab opened
	// on a URL starts on about:blank: that is not it.
	settled := `document.readyState === "complete" && location.href !== "about:blank"`
	for ctx.Err() == nil {
		r, err := cdpconn.Send(ctx, c, s, runtime.Evaluate, runtime.EvaluateParams{Expression: settled, ReturnByValue: ptr(true)})
		if err == nil && r.Result != nil && string(r.Result.Value) == "true" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	r, err := cdpconn.Send(ctx, c, s, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    `location.href + "\n" + (document.documentElement ? document.documentElement.innerText : "")`,
		ReturnByValue: ptr(true),
	})
	switch {
	case err != nil:
		p.Error = strings.TrimSpace(p.Error + " " + err.Error())
	case r.Result != nil:
		var text string
		json.Unmarshal(r.Result.Value, &text)
		p.Text = text
	}
	return p
}

// loadResource reads u with Network.loadNetworkResource from a tab on origin.
func loadResource(ctx context.Context, c *cdpconn.Conn, origin, u string) attackPage {
	p := attackPage{URL: "resource " + u}
	ctx, cancel := context.WithTimeout(ctx, testsite.Patience)
	defer cancel()
	created, err := cdpconn.Send(ctx, c, "", target.CreateTarget, target.CreateTargetParams{URL: origin})
	if err != nil {
		p.Error = err.Error()
		return p
	}
	defer cdpconn.Send(context.WithoutCancel(ctx), c, "", target.CloseTarget, target.CloseTargetParams{TargetID: created.TargetID})
	session, err := cdpconn.Send(ctx, c, "", target.AttachToTarget, target.AttachToTargetParams{TargetID: created.TargetID, Flatten: ptr(true)})
	if err != nil {
		p.Error = err.Error()
		return p
	}
	s := session.SessionID
	tree, err := cdpconn.Send(ctx, c, s, page.GetFrameTree, cdp.Empty{})
	if err != nil || tree.FrameTree == nil {
		p.Error = fmt.Sprint("frame tree: ", err)
		return p
	}
	loaded, err := cdpconn.Send(ctx, c, s, network.LoadNetworkResource, network.LoadNetworkResourceParams{
		FrameID: tree.FrameTree.Frame.ID, URL: u, Options: &network.LoadNetworkResourceOptions{},
	})
	if err != nil || loaded.Resource == nil {
		p.Error = fmt.Sprint("load: ", err)
		return p
	}
	if !loaded.Resource.Success {
		p.Error = fmt.Sprintf("load failed: %s (net error %v)", loaded.Resource.NetErrorName, loaded.Resource.NetError)
		return p
	}
	var text []byte
	for range 100 {
		r, err := cdpconn.Send(ctx, c, "", io.Read, io.ReadParams{Handle: loaded.Resource.Stream})
		if err != nil {
			p.Error = "read: " + err.Error()
			break
		}
		text = append(text, r.Data...)
		if r.EOF {
			break
		}
	}
	p.Text = string(text)
	return p
}

// download allows downloads into dir, with their events, and fetches u,
// then waits for the browser to report the download's end: saved
// ("completed") or refused ("canceled").
func download(ctx context.Context, c *cdpconn.Conn, events <-chan *cdproto.Message, u, dir string) string {
	ctx, cancel := context.WithTimeout(ctx, testsite.Patience)
	defer cancel()
	if _, err := cdpconn.Send(ctx, c, "", browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: ptr(true),
	}); err != nil {
		return "setDownloadBehavior: " + err.Error()
	}
	created, err := cdpconn.Send(ctx, c, "", target.CreateTarget, target.CreateTargetParams{URL: "about:blank"})
	if err != nil {
		return "createTarget: " + err.Error()
	}
	session, err := cdpconn.Send(ctx, c, "", target.AttachToTarget, target.AttachToTargetParams{TargetID: created.TargetID, Flatten: ptr(true)})
	if err != nil {
		return "attach: " + err.Error()
	}
	nav, err := cdpconn.Send(ctx, c, session.SessionID, page.Navigate, page.NavigateParams{URL: u})
	if err != nil {
		return "navigate: " + err.Error()
	}
	status := "navigated: " + nav.ErrorText
	for {
		select {
		case m := <-events:
			if m.Method == "Browser.downloadProgress" {
				var ev browser.EventDownloadProgress
				if json.Unmarshal(m.Params, &ev) == nil && ev.State != browser.DownloadProgressStateInProgress {
					return status + "; download " + ev.State.String()
				}
			}
		case <-ctx.Done():
			return status + "; " + ctx.Err().Error()
		}
	}
}

func ptr[T any](v T) *T { return &v }
