package viewer

import (
	"html/template"
	"strconv"
	"strings"
)

// An intent page's long parts, the rows of its pairs' table and its paired
// plot (a line per pair), are written here rather than by html/template:
// at hundreds of intents of tens of pairs, html/template's reflective call
// per value was most of the report's time (issue 20). They hold only the
// site's own values (numbers, outcome and order names that a row's
// validation allows, pair classes, and links made of slug names and
// numbers), and every value still goes through htmlEscaper, html/template's
// escaping for text and quoted attributes.
// TestMarkupIsWhatTheTemplateWrites checks the bytes against html/template's
// own rendering of the same parts.

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

// ends writes an SVG line's end points as its attributes.
func (m *markup) ends(x1, x2, y1, y2 float64) {
	for _, a := range []struct {
		name string
		v    float64
	}{{` x1="`, x1}, {`" x2="`, x2}, {`" y1="`, y1}, {`" y2="`, y2}} {
		m.raw(a.name)
		m.float(a.v)
	}
	m.raw(`"`)
}

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

// html is the plot as an inline SVG with its note, or a note saying why
// there is nothing to plot.
func (p *pairedPlot) html() template.HTML {
	m := markup{b: make([]byte, 0, 1024+240*len(p.Lines))}
	if len(p.Lines) == 0 {
		m.raw(`<p class="note">No complete pair yet, so nothing to plot`)
		if p.Incomplete != 0 {
			m.raw(` (`)
			m.int(p.Incomplete)
			m.raw(` incomplete)`)
		}
		m.raw(`.</p>`)
		return m.html()
	}
	m.raw(`<svg role="img" aria-label="Paired wall times, control to treatment" width="`)
	m.int(p.Width)
	m.raw(`" height="`)
	m.int(p.Height)
	m.raw(`" viewBox="0 0 `)
	m.int(p.Width)
	m.raw(` `)
	m.int(p.Height)
	m.raw("\">\n")
	for _, t := range p.Ticks {
		m.raw(`<line class="grid"`)
		m.ends(p.ControlX, p.TreatX, t.Y, t.Y)
		m.raw(`/><text x="`)
		m.float(p.ControlX - 8)
		m.raw(`" y="`)
		m.float(t.Y + 4)
		m.raw(`" text-anchor="end">`)
		m.text(t.Label)
		m.raw("</text>\n")
	}
	for _, x := range []float64{p.ControlX, p.TreatX} {
		m.raw(`<line class="axis"`)
		m.ends(x, x, p.Top, p.Bottom)
		m.raw(`/>`)
	}
	m.raw("\n")
	for _, axis := range []struct {
		x    float64
		name string
	}{{p.ControlX, "control"}, {p.TreatX, "treatment"}} {
		m.raw(`<text x="`)
		m.float(axis.x)
		m.raw(`" y="`)
		m.float(p.Bottom + 18)
		m.raw(`" text-anchor="middle">`)
		m.raw(axis.name)
		m.raw(`</text>`)
	}
	m.raw("\n")
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
		m.raw(`"`)
		m.ends(p.ControlX, p.TreatX, l.Y1, l.Y2)
		m.raw(` stroke-width="1.5"/>`)
		if l.Href != "" {
			m.raw("</a>\n")
		} else {
			m.raw("</g>\n")
		}
	}
	m.raw(`</svg>
<p class="note">`)
	m.int(p.Shown)
	m.raw(` complete `)
	if p.Shown == 1 {
		m.raw(`pair`)
	} else {
		m.raw(`pairs`)
	}
	m.raw(`, one line each from control's wall time to treatment's: `)
	m.int(p.TreatFaster)
	m.raw(` down (treatment faster), `)
	m.int(p.Slower)
	m.raw(` up.`)
	if p.Incomplete != 0 {
		m.raw(` `)
		m.int(p.Incomplete)
		m.raw(` incomplete left out.`)
	}
	m.raw(`<br><span class="swatch k-control-only"></span>only control correct <span class="swatch k-treatment-only"></span>only treatment correct <span class="swatch k-both"></span>both <span class="swatch k-neither"></span>neither</p>`)
	return m.html()
}
