package viewer

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
)

// Style is the style sheet of the site's intent and pair pages: the
// report's (report.HTMLStyle) and the site's own rules (report.SiteStyle).
var Style = report.HTMLStyle + report.SiteStyle + filterCSS()

// Policy is the Content-Security-Policy of the site's intent and pair
// pages: nothing runs, nothing loads from elsewhere, no form goes
// anywhere; the page's one inline style sheet (Style, by its hash) and
// images from the run's own files (the screenshots) are all it may use.
// Each page carries it; Handler sends it too, with report.html's.
var Policy = "default-src 'none'; style-src " + report.StyleSource(Style) + "; img-src 'self'; base-uri 'none'; form-action 'none'"

// webMCPNames say whose WebMCP a trial's start page had, by the row's
// webmcp_impl (valid rows have no other).
var webMCPNames = map[pairbench.WebMCPImpl]string{
	pairbench.WebMCPNative:   "the browser's own (native)",
	pairbench.WebMCPPolyfill: "pairbench's polyfill (the browser has none)",
	"":                       "not recorded",
}

// filterCSS hides the pairs the intent page's filters leave out: the
// report's templates/filters.css.tmpl's "pair filters", for every class
// of pair there is.
func filterCSS() string {
	classes := make([]pairClass, len(pairClasses))
	for i, c := range pairClasses {
		classes[i] = c.Class
	}
	return report.StyleRules("pair filters", classes)
}

// pages are the intent and pair pages, from the report's templates
// (site.html.tmpl, with the head report.html has too), so the site and
// report.html are written from one set.
var pages = template.Must(report.ParsePages(template.New("site.html.tmpl").Funcs(template.FuncMap{
	"outcomeClass": func(o pairbench.Outcome) string { return "o-" + string(o) },
	"millis":       millis,
	"seconds":      seconds,
	"join":         strings.Join,
	"webmcp":       func(w pairbench.WebMCPImpl) string { return webMCPNames[w] },
	"caps": func(cs []pairbench.Cap) string {
		s := make([]string, len(cs))
		for i, c := range cs {
			s[i] = string(c)
		}
		return strings.Join(s, ", ")
	},
	"at": func(ms int64) string {
		if ms < 0 {
			return ""
		}
		return fmt.Sprintf("%.1f s", float64(ms)/1000)
	},
}), "site.html.tmpl"))
