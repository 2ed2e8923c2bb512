package viewer

import (
	"errors"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path"
	"strings"

	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
)

// Handler serves the report site of the run directory dir: report.html at
// "/", the intent and pair pages, and the trial files they show or link
// (screenshots, transcripts, timelines). It serves nothing else of the
// directory, never follows a link out of it (os.Root), and sends each page
// its Content-Security-Policy as a header; a trial's files, which hold
// what hostile pages wrote, go out as inert text or images that may not be
// framed, sniffed or run.
func Handler(dir string) (http.Handler, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	if _, err := root.Stat(rundir.ReportHTML); err != nil {
		root.Close()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errNoRun
		}
		return nil, err
	}
	return &handler{root: root, files: http.FileServerFS(root.FS())}, nil
}

type handler struct {
	root  *os.Root
	files http.Handler
}

// Headers returns the headers the report site sends with the file at rel,
// a clean slash-separated path in the run directory (report.html,
// intents/..., a trial's screenshot, transcript or timeline), and false
// for a path that is not part of the site. Whoever serves a run's site
// from elsewhere (pairbench serve, from the artifact store) sends these.
func Headers(rel string) (http.Header, bool) {
	hdr := http.Header{}
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Cache-Control", "no-cache")
	switch ext := path.Ext(rel); {
	case rel == rundir.ReportHTML:
		hdr.Set("Content-Type", "text/html; charset=utf-8")
		hdr.Set("Content-Security-Policy", report.HTMLPolicy+"; frame-ancestors 'none'")
	case ext == ".html" && strings.HasPrefix(rel, IntentsDir+"/"):
		hdr.Set("Content-Type", "text/html; charset=utf-8")
		hdr.Set("Content-Security-Policy", Policy+"; frame-ancestors 'none'")
	case rundir.IsTrialFile(rel) && (ext == ".png" || ext == ".json" || ext == ".jsonl"):
		hdr.Set("Content-Security-Policy", inert)
		switch ext {
		case ".png":
			hdr.Set("Content-Type", "image/png")
		case ".json":
			hdr.Set("Content-Type", "application/json")
		default:
			hdr.Set("Content-Type", "text/plain; charset=utf-8")
		}
	default:
		return nil, false
	}
	return hdr, true
}

// inert is the policy of everything that is not one of the site's pages.
const inert = "default-src 'none'; sandbox; frame-ancestors 'none'"

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the report site is read only", http.StatusMethodNotAllowed)
		return
	}
	rel := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if rel == "" {
		http.Redirect(w, r, "/"+rundir.ReportHTML, http.StatusFound)
		return
	}
	site, ok := Headers(rel)
	if !ok {
		http.NotFound(w, r)
		return
	}
	maps.Copy(w.Header(), site)
	info, err := h.root.Stat(rel)
	if err != nil || info.IsDir() {
		http.NotFound(w, r) // also what os.Root says of a link out of the directory
		return
	}
	r.URL.Path = "/" + rel
	h.files.ServeHTTP(w, r)
}
