package report

import (
	"embed"
	"html/template"
	"io/fs"
	"strings"
	texttemplate "text/template"
)

//go:embed templates
var templateFiles embed.FS

// Templates holds the report's templates and style sheets: report.md and
// the pull-request comment and check run summary (report.md.tmpl),
// report.html (report.html.tmpl, with arms.html.tmpl, and report.css) and
// the viewer's intent and pair pages (site.html.tmpl and site.css, on top
// of report.css), every page of the site opening with the one head of
// page.html.tmpl (ParsePages), and the style rules of their filters
// (filters.css.tmpl, StyleRules), so that every page is written from one
// set of files.
var Templates = must(fs.Sub(templateFiles, "templates"))

// pageTemplate defines what every page of the site shares: its "head"
// (the document's head, given a PageHead) and its "foot".
const pageTemplate = "page.html.tmpl"

// PageHead is what a page of the report site says in its head: its title,
// its Content-Security-Policy, and its one inline style sheet (allowed by
// that policy by its hash).
type PageHead struct {
	Title  string
	Policy string
	Style  template.CSS
}

// ParsePages parses the named files of Templates into t, with the head and
// foot every page of the site shares (page.html.tmpl).
func ParsePages(t *template.Template, names ...string) (*template.Template, error) {
	return t.ParseFS(Templates, append(names, pageTemplate)...)
}

// styleRules are the style rules written from lists of choices,
// templates/filters.css.tmpl.
var styleRules = texttemplate.Must(texttemplate.ParseFS(Templates, "filters.css.tmpl"))

// StyleRules is the rules of filters.css.tmpl's template name written for
// data. It panics on an error, as the package's templates do when they
// are parsed: the rules are written once, for fixed lists, when a package
// is initialized.
func StyleRules(name string, data any) string {
	var b strings.Builder
	if err := styleRules.ExecuteTemplate(&b, name, data); err != nil {
		panic(err)
	}
	return b.String()
}

// SiteStyle is the style the viewer's pages add to HTMLStyle.
var SiteStyle = templateFile("site.css")

// templateFile is the text of the file name in Templates.
func templateFile(name string) string {
	return string(must(fs.ReadFile(Templates, name)))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
