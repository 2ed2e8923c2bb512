package local

import (
	"testing"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/stretchr/testify/assert"
)

// TestNativeModeIsRefusedUnknown: a mode the provider does not know is
// refused before any browser starts.
func TestNativeModeIsRefusedUnknown(t *testing.T) {
	site := testsite.New(t)
	_, err := New(Config{Hosts: site.Hosts(), WebMCP: "builtin", Log: quiet})
	assert.ErrorContains(t, err, `WebMCP "builtin"`)
}
