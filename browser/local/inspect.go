package local

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pairbench/pairbench/sandbox"
)

// browserEnv are the only variables a browser's processes may hold: the
// sandbox's, the egress's proxy variables, and those Chromium and the init
// set for their own children (FC_FONTATIONS: Chromium 156 sets it in a
// process that reads fonts, tells fontconfig which font backend to use, and
// holds no secret).
var browserEnv = []string{
	"HOME", "TMPDIR", "PATH", "LANG", "PWD",
	"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy", "NODE_USE_ENV_PROXY",
	"DBUS_SESSION_BUS_ADDRESS", "CHROME_DESKTOP", "FC_FONTATIONS",
}

// browserTop and browserEtc are what a browser may see at / and in /etc.
var (
	browserTop = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "var", "proc", "dev", "tmp", ".pairbench"}
	browserEtc = []string{"fonts", "chromium", "passwd", "group", "hosts", "resolv.conf", "nsswitch.conf", "host.conf",
		"gai.conf", "ld.so.cache", "localtime", "ssl", "ca-certificates", "pki", "crypto-policies", "alternatives"}
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// environNames returns the names of the variables in a process's
// environment block, given its command line as /proc shows them. Chromium
// writes a helper's title over its argument and environment blocks, and
// the kernel then shows the whole title as the command line: an entry the
// title holds is title text, wherever its cut makes it look like a
// variable ("...-pid=0 --flag" read as "id=0 --flag"), never a variable.
func environNames(environ, cmdline []byte) []string {
	title := strings.ReplaceAll(string(cmdline), "\x00", " ")
	var names []string
	for _, kv := range strings.Split(string(environ), "\x00") {
		name, _, ok := strings.Cut(kv, "=")
		if ok && envName.MatchString(name) && !strings.Contains(title, kv) {
			names = append(names, name)
		}
	}
	return names
}

// inspect returns what is wrong, seen from the host, with the confinement
// of the processes below root, the sandbox's bubblewrap on the host; self
// are the launcher's own namespaces.
func inspect(root int, self map[string]string) []string {
	pids := processTree(root)
	if len(pids) < 3 {
		return []string{"the browser's processes are gone"}
	}
	var problems []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			problems = append(problems, p)
		}
	}
	// pids[0] is bubblewrap on the host side; from its child, the
	// sandbox's PID 1, on everything is inside.
	inside, err := procNamespaces(pids[1])
	if err != nil {
		return []string{"cannot read the sandbox's namespaces: " + err.Error()}
	}
	chromiumSandbox := false
	main := 0
	for _, pid := range pids[1:] {
		status, err1 := procStatus(pid)
		ns, err2 := procNamespaces(pid)
		cmdline, err3 := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		environ, err4 := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if os.IsPermission(err4) && !strings.HasPrefix(status["Name"], "chrom") {
			// The sandbox's own PID 1 and init are undumpable: only root
			// reads their environment (an empty one).
			err4 = nil
		}
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			continue // exited meanwhile
		}
		args := string(cmdline)
		name := status["Name"]
		if _, kind, ok := strings.Cut(args, "--type="); ok {
			kind, _, _ = strings.Cut(kind, "\x00")
			kind, _, _ = strings.Cut(kind, " ")
			name += " " + kind
		}
		for _, id := range strings.Fields(status["Uid"]) {
			if id == "0" {
				add(name + " runs as the host's root")
			}
		}
		if status["NoNewPrivs"] != "1" {
			add(name + " may gain privileges (no no_new_privs)")
		}
		if status["Seccomp"] != "2" {
			add(name + " runs without a seccomp filter")
		}
		if ns["user"] == inside["user"] && status["CapEff"] != "0000000000000000" {
			add(name + " holds capabilities")
		}
		for _, kind := range []string{"mnt", "pid", "net"} {
			if ns[kind] == self[kind] {
				add(name + " shares the host's " + kind + " namespace")
			}
		}
		for _, v := range environNames(environ, cmdline) {
			if _, initOnly := sandbox.InitOnlyEnv()[v]; initOnly && pid == pids[1] {
				continue // the init's own, removed for everything it starts
			}
			if !slices.Contains(browserEnv, v) {
				add(name + " has " + v + " in its environment")
			}
		}
		if strings.Contains(args, "--type=renderer") && ns["user"] != inside["user"] {
			if n, _ := strconv.Atoi(status["Seccomp_filters"]); n >= 2 {
				chromiumSandbox = true
			}
		}
		if main == 0 && strings.HasPrefix(name, "chrom") && !strings.Contains(args, "--type=") {
			main = pid
		}
	}
	if !chromiumSandbox {
		add("no renderer runs in Chromium's own sandbox (namespaces and seccomp-bpf)")
	}
	if main == 0 {
		return append(problems, "no main Chromium process")
	}
	for dir, allowed := range map[string][]string{"/": browserTop, "/etc": browserEtc, "/var": {"cache"}, "/var/cache": {"fontconfig"}} {
		entries, err := os.ReadDir(filepath.Join(fmt.Sprintf("/proc/%d/root", main), dir))
		if err != nil {
			add("cannot read the browser's " + dir + ": " + err.Error())
			continue
		}
		for _, e := range entries {
			if !slices.Contains(allowed, e.Name()) {
				add("the browser sees the host's " + filepath.Join(dir, e.Name()))
			}
		}
	}
	return problems
}

// processTree returns root, when it lives, and every live process below it.
func processTree(root int) []int {
	parents, _ := liveParents()
	children := map[int][]int{}
	for pid, ppid := range parents {
		children[ppid] = append(children[ppid], pid)
	}
	var pids []int
	if _, alive := parents[root]; alive {
		pids = append(pids, root)
	}
	for i := 0; i < len(pids); i++ {
		slices.Sort(children[pids[i]])
		pids = append(pids, children[pids[i]]...)
	}
	return pids
}

// liveParents maps every live (not zombie) process on the host to its
// parent. A process that ends while /proc is read is left out.
func liveParents() (map[int]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	parents := map[int]int{}
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
		f := strings.Fields(s[i+1:]) // state, ppid, ...
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		parents[pid] = ppid
	}
	return parents, nil
}

// procStatus returns /proc/PID/status as name -> value.
func procStatus(pid int) (map[string]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out, nil
}

// procNamespaces returns pid's namespace links by kind.
func procNamespaces(pid int) (map[string]string, error) {
	out := map[string]string{}
	for _, kind := range []string{"mnt", "pid", "net", "user"} {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, kind))
		if err != nil {
			return nil, err
		}
		out[kind] = link
	}
	return out, nil
}
