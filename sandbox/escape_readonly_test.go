package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEscapeReadOnlyPathInTheWorkspace: a read-only program mount must stay
// read-only. One inside the workspace (or holding it) is reachable writable
// through /workspace, and a link the agent leaves there would make the next
// run mount the link's target: New refuses them, however the path is
// spelled (directly, through a link, through a linked parent, holding the
// workspace, inside a worktree that is copied).
func TestEscapeReadOnlyPathInTheWorkspace(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		owner := os.Geteuid()
		if owner == 0 {
			owner = testLauncherUID
		}
		ws := ownedDir(t, owner)
		require.NoError(t, os.MkdirAll(filepath.Join(ws, "bin"), 0o755))
		tool := filepath.Join(ws, "bin", "tool")
		require.NoError(t, os.WriteFile(tool, []byte("#!/bin/sh\necho tool\n"), 0o755))
		giveTo(t, owner, filepath.Join(ws, "bin"), tool)
		outside := sharedDir(t)
		require.NoError(t, os.Symlink(tool, filepath.Join(outside, "tool-link")))
		require.NoError(t, os.Symlink(filepath.Join(ws, "bin"), filepath.Join(outside, "bin-link")))
		require.NoError(t, os.Mkdir(filepath.Join(ws, "sub"), 0o755))
		giveTo(t, owner, filepath.Join(ws, "sub"))

		cases := map[string]Policy{
			"inside the workspace":             {Workspace: ws, ReadOnly: []string{tool}},
			"the workspace itself":             {Workspace: ws, ReadOnly: []string{ws}},
			"a link into the workspace":        {Workspace: ws, ReadOnly: []string{filepath.Join(outside, "tool-link")}},
			"through a linked parent":          {Workspace: ws, ReadOnly: []string{filepath.Join(outside, "bin-link", "tool")}},
			"holding the workspace":            {Workspace: filepath.Join(ws, "sub"), ReadOnly: []string{ws}},
			"inside a worktree that is copied": {Workspace: ws, Hide: []string{".env"}, ReadOnly: []string{tool}},
			"the workspace through a link":     {Workspace: filepath.Join(outside, "bin-link"), ReadOnly: []string{tool}},
		}
		for name, p := range cases {
			t.Run(name, func(t *testing.T) {
				sb, err := New(t.Context(), p)
				if err == nil {
					// What the old launcher let through: the agent rewrites
					// the "read-only" program, then swaps it for a link.
					r := runSh(t, sb, `echo 'echo pwned' > /workspace/bin/tool; rm -f /workspace/bin/tool; ln -s /etc/passwd /workspace/bin/tool`)
					sb.Close()
					t.Fatalf("New accepted a read-only mount the workspace reaches: %s", r.out)
				}
				assert.ErrorContains(t, err, "read-only mount")
			})
		}
		b, err := os.ReadFile(tool)
		require.NoError(t, err)
		assert.Equal(t, "#!/bin/sh\necho tool\n", string(b))

		// A program beside the workspace still mounts, and cannot be written.
		prog := filepath.Join(outside, "prog")
		require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\necho prog\n"), 0o755))
		sb := openSandbox(t, Policy{Workspace: ws, ReadOnly: []string{prog}})
		r := runSh(t, sb, prog+`; echo pwned > `+prog+`; true`)
		assert.Contains(t, r.out, "prog\n")
		b, err = os.ReadFile(prog)
		require.NoError(t, err)
		assert.Equal(t, "#!/bin/sh\necho prog\n", string(b))
	})
}
