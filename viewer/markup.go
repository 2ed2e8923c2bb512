package viewer

import (
	"html/template"
	"strconv"
	"strings"
)

// An intent page's two long lists, the rows of its pairs' table and the
// lines of its paired plot, are written here rather than by html/template:
// at hundreds of intents of tens of pairs, html/template's reflective call
// per value was most of the report's time (issue 20). They hold only the
// site's own values (numbers, outcome and order names that a row's
// validation allows, pair classes, and links made of slug names and
// numbers), and every value still goes through htmlEscaper, html/template's
// escaping for text and quoted attributes.
// TestMarkupIsWhatTheTemplateWrites checks the bytes against html/template's
// own rendering of the same lists.

// htmlEscaper escapes text and quoted attribute values exactly as
// html/template does for plain strings.
var htmlEscaper = strings.NewReplacer(
	"\x00", "\uFFFD", `"`, "&#34;", "&", "&amp;", "'", "&#39;", "+", "&#43;", "<", "&lt;", ">", "&gt;")

// markup is HTML being written: constant markup as is, values escaped.
type markup struct{ b []byte }

func (m *markup) raw(s string)  { m.b = append(m.b, s...) }
func (m *markup) text(s string) { m.b = append(m.b, htmlEscaper.Replace(s)...) }
func (m *markup) int(n int)     { m.b = strconv.AppendInt(m.b, int64(n), 10) }

// float writes f as html/template does (fmt's %v).
func (m *markup) float(f float64) { m.b = strconv.AppendFloat(m.b, f, 'g', -1, 64) }

func (m *markup) html() template.HTML { return template.HTML(m.b) }

// pairRowsHTML is the rows of an intent page's table of pairs.
func pairRowsHTML(rows []pairRow) template.HTML {
	m := markup{b: make([]byte, 0, 320*len(rows))}
	for _, r := range rows {
		m.raw(`<tr class="p-row pc-`)
		m.text(string(r.Class))
		if r.Disagree {
			m.raw(` pd`)
		}
		m.raw(`"><td class="num">`)
		if r.Page != "" {
			m.raw(`<a href="`)
			m.text(r.Page)
			m.raw(`">pair `)
			m.int(r.Pair)
			m.raw(`</a>`)
		} else {
			m.int(r.Pair)
		}
		m.raw(`</td><td>`)
		m.text(r.Order)
		m.raw(`</td>`)
		for _, a := range r.Arms {
			m.raw(`<td>`)
			if a.Outcome != "" {
				m.raw(`<span class="outcome o-`)
				m.text(a.Outcome)
				m.raw(`">`)
				m.text(a.Outcome)
				m.raw(`</span> `)
				m.text(a.Wall)
				m.raw(`<small>`)
				m.int(a.Turns)
				m.raw(` turns`)
				if a.Adopted {
					m.raw(` · used a registered tool`)
				}
				if a.Attempts > 1 {
					m.raw(` · `)
					m.int(a.Attempts)
					m.raw(` attempts`)
				}
				m.raw(`</small>`)
			} else {
				m.raw(`no row`)
			}
			m.raw(`</td>`)
		}
		m.raw(`<td><span class="swatch k-`)
		m.text(string(r.Class))
		m.raw(`"></span>`)
		m.text(string(r.Class))
		m.raw("</td></tr>\n")
	}
	return m.html()
}

// linesHTML is the lines of p, each linked to its pair's page when it has
// one.
func (p *pairedPlot) linesHTML() template.HTML {
	m := markup{b: make([]byte, 0, 240*len(p.Lines))}
	for _, l := range p.Lines {
		if l.Href != "" {
			m.raw(`<a href="`)
			m.text(l.Href)
			m.raw(`" class="p-row pc-`)
		} else {
			m.raw(`<g class="p-row pc-`)
		}
		m.text(string(l.Class))
		if l.Disagree {
			m.raw(` pd`)
		}
		m.raw(`"><title>`)
		m.text(l.Title)
		m.raw(`</title><line class="c-`)
		m.text(string(l.Class))
		m.raw(`" x1="`)
		m.float(p.ControlX)
		m.raw(`" x2="`)
		m.float(p.TreatX)
		m.raw(`" y1="`)
		m.float(l.Y1)
		m.raw(`" y2="`)
		m.float(l.Y2)
		m.raw(`" stroke-width="1.5"/>`)
		if l.Href != "" {
			m.raw("</a>\n")
		} else {
			m.raw("</g>\n")
		}
	}
	return m.html()
}
