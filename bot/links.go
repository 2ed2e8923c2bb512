package bot

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/intents/config"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/state"
	"github.com/pairbench/pairbench/viewer"
)

// Report links. A comment links a run's report site as
//
//	<PublicURL>/runs/<run id>/<signature>/report.html
//
// a link that lasts: the service streams each page of the site (the run
// page, its intent and pair pages, the trial files they show) from the
// store when it is asked for, so the link works as long as the run is in
// the store (a presigned URL in a comment would die within 7 days, sooner
// with role credentials, be ~700 characters long, and reach one object: a
// presigned report.html's relative links to its intent pages lead
// nowhere). The signature, an HMAC of the run id under Config.LinkKey, is
// the access check, and sits in the path so that the site's relative links
// carry it: a link works for the runs the service made and linked, not for
// a run id someone guessed, and for the files of the run's site only. No
// path of the server ever reaches a comment. Links of the earlier form,
// /runs/<run id>/report?sig=<signature>, lead to the same pages.

// reportLink returns run's stable report link, "" without a PublicURL.
func (b *Bot) reportLink(run string) string {
	if b.cfg.PublicURL == "" {
		return ""
	}
	return strings.TrimSuffix(b.cfg.PublicURL, "/") + sitePath(run, b.linkSig(run)) + rundir.ReportHTML
}

// sitePath is where run's site is served: /runs/<run id>/<signature>/.
func sitePath(run, sig string) string {
	return "/runs/" + url.PathEscape(run) + "/" + sig + "/"
}

func (b *Bot) linkSig(run string) string {
	mac := hmac.New(sha256.New, b.cfg.LinkKey)
	mac.Write([]byte("report:" + run))
	return hex.EncodeToString(mac.Sum(nil))[:32]
}

// LinkKey derives the key that signs report links (Config.LinkKey) from
// the webhook secret, so rotating the secret revokes every link.
func LinkKey(webhookSecret []byte) []byte {
	mac := hmac.New(sha256.New, webhookSecret)
	mac.Write([]byte("pairbench report links"))
	return mac.Sum(nil)
}

// ReportHandler serves the report sites under /runs/: for a valid
// signature of a run the service knows, GET /runs/<run id>/<signature>/<file>
// streams the file of the run's site from the store with the headers the
// site's own server sends (viewer.Headers: each page's
// Content-Security-Policy; trial files inert, never run, framed or
// sniffed), and refuses every other path, in the run or out of it. A run
// without report.html (a store that has only the Markdown report) gets
// report.md as plain text. GET /runs/<run id>/report?sig=<signature>, the
// earlier links, redirects to the site.
func (b *Bot) ReportHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "report links are read only", http.StatusMethodNotAllowed)
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, "/runs/")
		run, tail, _ := strings.Cut(rest, "/")
		sig, rel, inSite := strings.Cut(tail, "/")
		if !ok || run == "" || (!inSite && tail != "report") {
			http.NotFound(w, r)
			return
		}
		if !inSite {
			sig = r.URL.Query().Get("sig")
		}
		if len(b.cfg.LinkKey) == 0 || subtle.ConstantTimeCompare([]byte(sig), []byte(b.linkSig(run))) != 1 {
			http.Error(w, "this report link is not valid", http.StatusForbidden)
			return
		}
		if !inSite || rel == "" {
			w.Header().Set("Cache-Control", "no-store")
			http.Redirect(w, r, sitePath(run, sig)+rundir.ReportHTML, http.StatusFound)
			return
		}
		headers, ok := siteFile(rel)
		if !ok {
			http.NotFound(w, r)
			return
		}
		ctx := r.Context()
		var bn state.Bench
		var found bool
		if err := b.state.View(ctx, func(tx *state.Tx) (err error) {
			if bn, found, err = tx.Bench(ctx, run); found || err != nil {
				return err
			}
			// compare: both's second run is known by its bench's.
			if first, ok := strings.CutSuffix(run, "-none"); ok && config.AgainstNoneRunID(first) == run {
				bn, found, err = tx.Bench(ctx, first)
				found = found && bn.Base != ""
			}
			return err
		}); err != nil {
			b.log.Error("report link: reading the state", "run", run, "err", err)
			http.Error(w, "the report cannot be found now; try again later", http.StatusServiceUnavailable)
			return
		}
		if !found {
			http.NotFound(w, r)
			return
		}
		if err := b.serveSiteFile(ctx, w, r, run, rel, headers); err != nil {
			if errors.Is(err, artifacts.ErrNotExist) {
				http.Error(w, "this run has no such page (yet)", http.StatusNotFound)
				return
			}
			b.log.Error("report link", "run", run, "file", rel, "err", redact(err.Error()))
			http.Error(w, "the report cannot be read now; try again later", http.StatusBadGateway)
		}
	})
}

// siteFile returns the headers of rel if it is a file of a run's site: a
// clean relative path (no "..", no empty or dot element) that the viewer
// serves, or report.md.
func siteFile(rel string) (http.Header, bool) {
	if rel != path.Clean(rel) || strings.HasPrefix(rel, "/") || rel == "." || strings.Contains("/"+rel+"/", "/../") {
		return nil, false
	}
	if rel == rundir.ReportMarkdown {
		return markdownHeaders(), true
	}
	return viewer.Headers(rel)
}

// markdownHeaders are report.md's: plain text that nothing runs.
func markdownHeaders() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	return h
}

// serveSiteFile streams run's file rel from the store with headers;
// report.html falls back to report.md.
func (b *Bot) serveSiteFile(ctx context.Context, w http.ResponseWriter, r *http.Request, run, rel string, headers http.Header) error {
	rc, err := b.cfg.Store.Get(ctx, rundir.StoreKey(run, rel))
	if errors.Is(err, artifacts.ErrNotExist) && rel == rundir.ReportHTML {
		rc, err = b.cfg.Store.Get(ctx, rundir.StoreKey(run, rundir.ReportMarkdown))
		headers = markdownHeaders()
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	maps.Copy(w.Header(), headers)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := io.Copy(w, rc); err != nil {
		// The answer has begun: all that is left is to stop it short.
		b.log.Warn("report link: the store stopped mid-file", "run", run, "file", rel, "err", redact(err.Error()))
	}
	return nil
}
