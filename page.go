package pairbench

// PageState is what pairbench read of the page an agent left, from a world
// the page's own scripts cannot reach: what the intent's hard checks test
// and what a judge is shown.
type PageState struct {
	URL   string `json:"url"`
	Title string `json:"title,omitempty"`
	// Text is the page's visible text, white space collapsed, cut to
	// MaxPageText bytes.
	Text string `json:"text,omitempty"`
	// Elements are the first matches of the selectors asked for, in the
	// order asked.
	Elements []PageElement `json:"elements,omitempty"`
}

// MaxPageText bounds PageState.Text, and MaxElementText an element's text.
const (
	MaxPageText    = 16 << 10
	MaxElementText = 2 << 10
)

// PageElement is the first element a selector matched on the page, or why
// there is none.
type PageElement struct {
	Selector string `json:"selector"`
	Found    bool   `json:"found"`
	// Text is the element's visible text, white space collapsed, cut to
	// MaxElementText bytes.
	Text string `json:"text,omitempty"`
	// Value is a form control's current value; HasValue is false for an
	// element that has none.
	Value    string `json:"value,omitempty"`
	HasValue bool   `json:"has_value,omitempty"`
	// Error is the browser's message for a selector it could not parse.
	Error string `json:"error,omitempty"`
}
