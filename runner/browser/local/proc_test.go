package local

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// chromiumProcesses returns the live (not zombie) processes that belong to
// the browser on profile dir: those whose command line names the profile.
func chromiumProcesses(t testing.TB, dir string) []int {
	t.Helper()
	var pids []int
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), dir) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The state follows the parenthesised command name.
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// processGroup returns the live processes in process group pgid.
func processGroup(t testing.TB, pgid int) []int {
	t.Helper()
	var pids []int
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		// After ")": state, ppid, pgrp, ...
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}
