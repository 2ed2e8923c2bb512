package runner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pairbench/pairbench"
)

// PageToolsError says that an arm that registers no tools met a start page
// whose tools the browser's own WebMCP lists (native mode): the agent's
// webmcp tool, listing through the browser, would offer them, so the arm
// would not be tool-free. Another browser loads the same page; the setup
// ends at once.
type PageToolsError struct {
	Arm pairbench.Arm
	URL string
	// FrameTools are the tools the browser listed, by frame.
	FrameTools map[string][]string
}

func (e *PageToolsError) Error() string {
	var parts []string
	for _, frame := range slices.Sorted(maps.Keys(e.FrameTools)) {
		parts = append(parts, fmt.Sprintf("%s in frame %s", strings.Join(e.FrameTools[frame], ", "), frame))
	}
	return fmt.Sprintf("harness error: %s's start page %s has tools of its own in the browser's WebMCP (%s), which --webmcp native offers the agent; %s would not be tool-free (bench this site with --webmcp polyfill, or a start page without tools)",
		e.Arm, e.URL, strings.Join(parts, "; "), e.Arm)
}

// checkToolFree checks, in native mode, that the browser's own WebMCP lists
// no tool on the page of an arm that registers none: a *PageToolsError
// when it does. In polyfill mode the page's own tools are recorded instead
// (Setup.Native).
func checkToolFree(arm pairbench.Arm, url string, env *pairbench.WebMCPEnv) error {
	if env == nil || env.Mode != pairbench.WebMCPNative {
		return nil
	}
	tools := map[string][]string{}
	for frame, names := range env.FrameTools {
		if len(names) > 0 {
			tools[frame] = names
		}
	}
	if len(tools) == 0 {
		return nil
	}
	return &PageToolsError{Arm: arm, URL: url, FrameTools: tools}
}
