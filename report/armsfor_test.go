package report

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestControlFor: a domain benched against none had no tools in control,
// whatever the run's control arm reads.
func TestControlFor(t *testing.T) {
	main := ArmName{Spec: "tools@main", Name: "main@1a2b3c4's tools", Tools: true}
	a := &Arms{Control: main, Treatment: ArmName{Spec: "tools", Name: "this PR's tools (5d6e7f8)", Tools: true},
		Domains: []DomainArms{{Domain: "books.example", Edited: []string{"find_books"}}, {Domain: "new.example", AbsentInControl: true},
			{Domain: "weather.example", AgainstNone: true}}}
	assert.Equal(t, main, a.ControlFor("books.example"))
	assert.Equal(t, NoToolsArm, a.ControlFor("new.example"))
	assert.Equal(t, NoToolsArm, a.ControlFor("weather.example"))
	assert.Equal(t, main, a.ControlFor("elsewhere.example"), "a domain the arms do not list has the run's control")
}
