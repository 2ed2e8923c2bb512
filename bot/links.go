package bot

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/state"
)

// Report links. A comment links a run's report as
//
//	<PublicURL>/runs/<run id>/report?sig=<signature>
//
// a link that lasts: it is checked and presigned when it is followed (a
// presigned URL in a comment would die within 7 days, sooner with role
// credentials, and be ~700 characters long), and a store that cannot
// presign (a directory) is served by the service itself; no path of the
// server ever reaches a comment. The signature, an HMAC of the run id under
// Config.LinkKey, is the access check: a link works for the runs the
// service made and linked, not for a run id someone guessed.

// LinkKey derives the key that signs report links (Config.LinkKey) from
// the webhook secret, so rotating the secret revokes every link.
func LinkKey(webhookSecret []byte) []byte {
	mac := hmac.New(sha256.New, webhookSecret)
	mac.Write([]byte("pairbench report links"))
	return mac.Sum(nil)
}

// linkTTL is how long the presigned URL a followed link redirects to works.
const linkTTL = 5 * time.Minute

// reportLink returns run's stable report link, "" without a PublicURL.
func (b *Bot) reportLink(run string) string {
	if b.cfg.PublicURL == "" {
		return ""
	}
	return strings.TrimSuffix(b.cfg.PublicURL, "/") + "/runs/" + url.PathEscape(run) + "/report?sig=" + b.linkSig(run)
}

func (b *Bot) linkSig(run string) string {
	mac := hmac.New(sha256.New, b.cfg.LinkKey)
	mac.Write([]byte("report:" + run))
	return hex.EncodeToString(mac.Sum(nil))[:32]
}

// ReportHandler serves GET /runs/<run id>/report: for a valid signature of
// a run the service knows, a redirect to a short-lived presigned URL of its
// report.html (or report.md), or, from a store that cannot presign, the
// report itself, in a sandbox (no scripts, no same-origin access).
func (b *Bot) ReportHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/runs/")
		run, tail, _ := strings.Cut(rest, "/")
		if !ok || tail != "report" || r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.NotFound(w, r)
			return
		}
		sig := r.URL.Query().Get("sig")
		if len(b.cfg.LinkKey) == 0 || subtle.ConstantTimeCompare([]byte(sig), []byte(b.linkSig(run))) != 1 {
			http.Error(w, "this report link is not valid", http.StatusForbidden)
			return
		}
		ctx := r.Context()
		var bn state.Bench
		var found bool
		if err := b.state.View(ctx, func(tx *state.Tx) (err error) {
			bn, found, err = tx.Bench(ctx, run)
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
		if err := b.serveReport(ctx, w, r, bn.Run); err != nil {
			if errors.Is(err, artifacts.ErrNotExist) {
				http.Error(w, "this run has no report (yet)", http.StatusNotFound)
				return
			}
			b.log.Error("report link", "run", run, "err", redact(err.Error()))
			http.Error(w, "the report cannot be read now; try again later", http.StatusBadGateway)
		}
	})
}

func (b *Bot) serveReport(ctx context.Context, w http.ResponseWriter, r *http.Request, run string) error {
	var last error
	for _, name := range []string{runner.ReportHTML, runner.ReportMarkdown} {
		key := runner.StoreKey(run, name)
		u, err := b.cfg.Store.Presign(ctx, key, linkTTL)
		if errors.Is(err, artifacts.ErrNotExist) {
			last = err
			continue
		}
		if err == nil && (strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) {
			w.Header().Set("Cache-Control", "no-store")
			http.Redirect(w, r, u, http.StatusFound)
			return nil
		}
		rc, err := b.cfg.Store.Get(ctx, key)
		if errors.Is(err, artifacts.ErrNotExist) {
			last = err
			continue
		}
		if err != nil {
			return err
		}
		defer rc.Close()
		ct := "text/html; charset=utf-8"
		if name == runner.ReportMarkdown {
			ct = "text/plain; charset=utf-8"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "private, max-age=300")
		_, err = io.Copy(w, rc)
		return err
	}
	return last
}
