package pairbench

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPrice(t *testing.T) {
	tests := []struct {
		in   any
		want float64
		ok   bool
	}{
		{"$1,234.50", 1234.5, true},
		{"1.234,50 €", 1234.5, true},
		{"€1.234,50", 1234.5, true},
		{"1 234,50 €", 1234.5, true},
		{"1\u00a0234,50\u00a0€", 1234.5, true},
		{"CHF 1'234.50", 1234.5, true},
		{"US$ 12", 12, true},
		{"12.5 EUR", 12.5, true},
		{"$12", 12, true},
		{"12,50", 12.5, true},
		{"1,234", 1234, true},
		{"1.234", 1.234, true},
		{"1.234.567", 1234567, true},
		{"1,234,567.89", 1234567.89, true},
		{"-$5.25", -5.25, true},
		{"$-5", -5, true},
		{"£0.99", 0.99, true},
		{12.5, 12.5, true},
		{7, 7, true},
		{json.Number("3.5"), 3.5, true},
		{"free", 0, false},
		{"", 0, false},
		{"$", 0, false},
		{"$12-$15", 0, false},
		{"1,23,456", 0, false},
		{"1,234,5.6", 0, false},
		{"12..5", 0, false},
		{"12.", 0, false},
		{".5", 0, false},
		{"$12.50/night", 0, false},
		{true, 0, false},
		{nil, 0, false},
		{[]any{1.0}, 0, false},
	}
	for _, tt := range tests {
		got, ok := Price(tt.in)
		assert.Equal(t, tt.ok, ok, "Price(%#v) ok", tt.in)
		if tt.ok {
			assert.InDelta(t, tt.want, got, 1e-9, "Price(%#v)", tt.in)
		}
	}
}

func TestAsSet(t *testing.T) {
	tests := []struct {
		in   any
		want []string
	}{
		{nil, []string{}},
		{"  Dune  ", []string{"dune"}},
		{[]any{"B", "a", "b ", 3.0, "3", 3}, []string{"3", "a", "b"}},
		{[]any{"New   York", "new york"}, []string{"new york"}},
		{[]any{1.5, true}, []string{"1.5", "true"}},
		{[]any{map[string]any{"b": "X", "a": 1}}, []string{`{"a":1,"b":"x"}`}},
		{[]any{[]any{"A", 2}}, []string{`["a",2]`}},
		{42, []string{"42"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, AsSet(tt.in), "AsSet(%#v)", tt.in)
	}
}
