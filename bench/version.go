package bench

import "runtime/debug"

// revision is the commit a build was made from, when the build says so
// (make build and the Action set it with -ldflags -X, which works where Go
// cannot stamp the VCS revision itself: -buildvcs=false, a worktree).
var revision string

// Version is pairbench's version, as run.json records it: the module
// version when built from a tagged module, else the VCS revision, else
// "devel".
func Version() string {
	if len(revision) >= 12 {
		return "devel-" + revision[:12]
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "devel-" + s.Value[:12]
		}
	}
	return "devel"
}
