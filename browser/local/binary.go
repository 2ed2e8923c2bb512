package local

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// CheckBinary refuses a Chromium binary that cannot be a trial browser
// before anything starts it: Ubuntu's chromium package installs a stub
// script that asks for the snap, and a snap's Chromium cannot run inside
// pairbench's sandbox (snapd confines it its own way, from outside).
func CheckBinary(path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		real = path
	}
	if strings.HasPrefix(path, "/snap/") || strings.HasPrefix(real, "/snap/") || filepath.Base(real) == "snap" {
		return snapError(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("chromium: %w (install Chromium, or give its binary with --chromium PATH)", err)
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if bytes.HasPrefix(head, []byte("#!")) && bytes.Contains(head, []byte("snap")) {
		return snapError(path)
	}
	return nil
}

func snapError(path string) error {
	return fmt.Errorf("chromium: %s is Ubuntu's snap Chromium (or the stub that installs it), which cannot run in pairbench's sandbox: install a Chromium that is not a snap (Debian's chromium package puts it at %s) and give it with --chromium PATH if it is elsewhere (docs/runners.md)",
		path, DefaultChromiumPath)
}
