package report

import (
	"embed"
	"io/fs"
)

//go:embed templates
var templateFiles embed.FS

// Templates holds the report's templates and style sheets: report.md and
// the pull-request comment and check run summary (report.md.tmpl),
// report.html (report.html.tmpl, with arms.html.tmpl, and report.css) and
// the viewer's intent and pair pages (site.html.tmpl and site.css, on top
// of report.css), so that every page of the site is written from one set
// of files.
var Templates = must(fs.Sub(templateFiles, "templates"))

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
