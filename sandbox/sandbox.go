// Package sandbox confines an agent with bubblewrap and lets it out only
// through an egress proxy that enforces a host allowlist and holds the real
// secrets.
//
// The confinement half (this file, env.go, redact.go, check.go, cgroup.go)
// builds the bubblewrap command line from a Policy; the egress half
// (egress*.go, init.go) is the proxy and the in-sandbox relay. docs/sandbox.md
// describes the threat model and every choice made here.
package sandbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/sys/unix"

	"github.com/pairbench/pairbench/internal/heldir"
)

// Paths inside the sandbox.
const (
	// HomeDir is the agent's HOME and TMPDIR: the per-agent directory,
	// mounted over /tmp.
	HomeDir = "/tmp"
	// WorkspaceDir is where the workspace is mounted and the command starts.
	WorkspaceDir = "/workspace"
)

// UID and GID are the sandboxed processes' ids as they see them. They are
// not root; on the host they are an unprivileged user's (see UIDRange).
const (
	UID = 1000
	GID = 1000
)

// Policy is what a sandbox may see and do. The zero Policy is the strictest:
// an empty workspace, no network at all, nothing from the host but /usr and
// the /etc files DNS and TLS need.
type Policy struct {
	// Workspace is a host directory mounted read-write at WorkspaceDir.
	// Empty means a fresh empty directory inside the per-agent directory.
	Workspace string

	// Hide lists patterns of secret files in Workspace that must read as
	// absent (DefaultHide is a good start). A pattern without a slash is
	// matched (path.Match) against every file and directory name, one with
	// a slash against the path relative to Workspace, both without regard
	// to case (SERVER.KEY is a key too); a matching directory is hidden
	// whole. When Hide is set, Workspace is not mounted live: the
	// sandbox works on a private copy taken at New without the hidden
	// files, so a secret file created in Workspace later never appears
	// either. Symbolic links are copied as links, never followed. The copy
	// is at Sandbox.Workspace and is removed by Close.
	Hide []string

	// ReadOnly lists programs installed outside /usr (Node's binary, an
	// agent's package directory). Each path is mounted read-only at the
	// same path inside. Name the binary and the package directory, never
	// an install prefix: New refuses system directories, the home
	// directory and its ancestors.
	ReadOnly []string

	// Env holds the variables the sandboxed commands get, beyond HOME,
	// TMPDIR, PATH and LANG. Nothing else from the host passes: build it
	// with AgentEnv to apply the allowlist. Values never appear on any
	// command line.
	Env map[string]string

	// Egress, when set, is the sandbox's only way out: its socket directory
	// is mounted, pairbench's own binary runs as the sandbox's init relaying
	// loopback ports to it, and its variables (proxy, CA, placeholders)
	// override Env. Without it the sandbox has no network but its own
	// loopback. The caller owns Egress and closes it.
	Egress *Egress

	// Limits caps memory, processes, file sizes, CPU and /tmp; a zero
	// field of memory, processes or file size is DefaultLimits'. New says
	// how they are enforced (Sandbox.LimitsReport).
	Limits Limits

	// TempRoot is the host directory per-agent directories are created in.
	// Empty means /tmp, whatever TMPDIR says.
	TempRoot string

	// Bwrap is the bubblewrap binary. Empty means "bwrap" from PATH.
	Bwrap string

	// Executable is the binary every command starts under as the
	// sandbox's init: one whose main runs RunInit for InitArg (pairbench,
	// InitProgram). Empty means InitProgram beside the running binary when
	// it is there and from the same build, else the running binary. It is
	// started from a descriptor, never mounted, so the sandbox's user need
	// not be able to reach its directory.
	Executable string

	// NoWorkspace leaves /workspace out: the command's only writable
	// directory is HomeDir (/tmp), where it starts. Workspace and Hide
	// must then be empty.
	NoWorkspace bool

	// Files are created read-only inside at the given absolute paths, with
	// the given contents (a program's configuration, such as Chromium's
	// policy file under /etc). Parent directories are created as needed;
	// a path under HomeDir, WorkspaceDir, /usr, /proc or /dev is refused.
	Files map[string]string

	// MemoryDirs are directories of HomeDir, by name, that each command
	// gets as a memory file system (tmpfs) of at most the given bytes
	// instead of the per-agent directory's disk: empty at the command's
	// start, private to it, gone when it ends, never seen from the host.
	// For data written often that need not outlive the command, such as a
	// browser's profile, whose databases would otherwise be journalled
	// and synced to disk.
	MemoryDirs map[string]int64

	// AllowUserNamespaces lets the commands create user namespaces of
	// their own, which Chromium's own sandbox needs for its renderers.
	// Without it (the default) a new user namespace is refused
	// (--disable-userns), so nothing inside can regain capabilities in
	// one. Allow it only for a program that uses it to confine itself
	// further.
	AllowUserNamespaces bool

	// UIDs is where a root launcher takes each sandbox's host uid from;
	// zero means DefaultUIDs. Unused by an unprivileged launcher, whose
	// sandboxes run as itself.
	UIDs UIDRange
}

// InitOnlyEnv returns the variables the sandbox's init, its PID 1, is
// started with for itself alone, unless the command's environment sets
// them. The init removes them before the command or any service starts:
// only PID 1's own environment block, as the host sees it in
// /proc/PID/environ, shows them. GOMAXPROCS=1: relaying and reaping need no
// parallelism, and each further P costs the Go runtime threads as it
// starts, which a busy machine makes every launch wait for (the runtime
// reads the variable only then).
func InitOnlyEnv() map[string]string { return map[string]string{"GOMAXPROCS": "1"} }

// DefaultHide names the files that commonly hold credentials in a worktree.
// A pattern with a slash is matched against the whole path ("**" crosses
// directories), one without against each name.
var DefaultHide = []string{
	// Environment files (dotenv, direnv, Cloudflare's wrangler).
	".env", ".env.*", "*.env", ".envrc", ".dev.vars", ".dev.vars.*",
	// Git: a repository's configuration (remote URLs with tokens,
	// credential helpers) at any depth, submodules' and worktrees' too.
	"**/.git/**/config", "**/.git/**/config.worktree", ".git-credentials",
	// Package managers, databases and tools that keep tokens in a dot file.
	".netrc", "_netrc", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pypirc", ".pgpass", ".my.cnf",
	".boto", ".s3cfg", ".vault-token", ".terraformrc", "terraform.rc", ".htpasswd",
	"*.tfstate", "*.tfstate.*", "*.tfvars",
	// Credential directories.
	".ssh", ".aws", ".azure", ".gnupg", ".docker", ".kube", "**/.config/gcloud",
	// Tools' logins kept in a home directory that a worktree may hold
	// (GitHub's CLIs, crates.io, RubyGems, Terraform Cloud, Docker's old
	// file, Maven, Gradle, Composer).
	"**/.config/gh", "**/.config/hub", "**/.cargo/credentials", "**/.cargo/credentials.toml",
	"**/.gem/credentials", "**/.terraform.d/credentials.tfrc.json", ".dockercfg",
	"**/.m2/settings.xml", "**/.m2/settings-security.xml", "**/.gradle/gradle.properties",
	"**/.composer/auth.json", "**/.config/composer/auth.json",
	// More of a home directory's: shell and database histories (where
	// "export TOKEN=..." is typed), git's user configuration and credential
	// store, cloud and deployment CLIs' tokens (Firebase's configstore,
	// DigitalOcean, Fly.io, ngrok, Cloudflare's tunnels and wrangler,
	// Databricks, Snowflake, dbt, Oracle Cloud, rclone, MySQL's login path,
	// Kaggle, Hugging Face, Netlify, Stripe, Sentry, container registries),
	// password stores and keyrings, age keys, browser profiles (cookies,
	// saved logins).
	".*_history", ".history", ".gitconfig", "**/.config/git",
	"**/.config/configstore", "**/.config/doctl", "**/.fly/config.yml", "**/.config/ngrok", "**/.ngrok2",
	"**/.cloudflared", "**/.wrangler/config", "**/.config/.wrangler", ".databrickscfg", "**/.snowflake",
	"**/.dbt/profiles.yml", "**/.oci", "**/.config/rclone", ".mylogin.cnf", "**/.kaggle/kaggle.json",
	"**/.cache/huggingface/token", "**/.huggingface/token", "**/.config/netlify", "**/.config/stripe",
	".sentryclirc", "**/.config/containers/auth.json", "**/.config/op", ".password-store",
	"**/.config/sops", "**/.local/share/keyrings", "**/.config/google-chrome", "**/.config/chromium", ".mozilla",
	// Agents' and coding assistants' own logins.
	"**/.claude/.credentials.json", "**/.claude/settings.local.json", "**/.codex/auth.json",
	".claude.json", "**/.config/github-copilot", "**/.gemini/oauth_creds.json",
	"credentials.json", "service-account*.json",
	// Keys, certificates with keys, keystores, password databases.
	"id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
	"*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.p8", "*.ppk", "*.kdbx",
	// Kerberos keytabs and ticket caches, VPN profiles (keys inline),
	// Mercurial's and Subversion's stored logins, Kubernetes configurations
	// kept outside .kube, pip's index credentials, Bundler's, Pulumi's,
	// GitLab's CLI, R's environment file, Streamlit's secrets.
	"*.keytab", "krb5cc_*", "*.ovpn", ".hgrc", "**/.hg/hgrc", "**/.subversion/auth",
	"kubeconfig", "*.kubeconfig", "pip.conf", "**/.bundle/config", "**/.pulumi/credentials.json",
	"**/.config/glab-cli", ".Renviron", "**/.streamlit/secrets.toml",
	// Token stores of the tools whose formats SecretBearing knows: Hugging
	// Face's every login, Poetry's and uv's index credentials (without a
	// keyring), pnpm's global configuration, npm's global and built-in
	// npmrc (no dot: PREFIX/etc/npmrc), Bun's user configuration,
	// python-gitlab's, Helm's repository passwords, Google's application
	// default credentials outside gcloud's directory.
	"**/.cache/huggingface/stored_tokens", "**/.config/pypoetry/auth.toml", "**/.local/share/uv/credentials",
	"**/.config/pnpm/rc", "npmrc", ".bunfig.toml", ".python-gitlab.cfg", "**/.config/helm/repositories.yaml",
	"application_default_credentials.json",
}

// Sandbox is one agent's confinement: its per-agent directory (over /tmp
// inside), its workspace and its cgroup. Commands started from it run in
// fresh namespaces each, sharing those directories. Close ends them all.
type Sandbox struct {
	policy    Policy
	bwrap     string
	exe       *os.File // pairbench binary for the init, started from its descriptor
	id        identity // who the sandbox is on the host
	devs      string   // where the device nodes in /dev are bound from
	devNote   string   // why not from readOnlyDevDir, when they are not
	divide    bool     // start bubblewrap under shareUserLimits (an unprivileged launcher's sandbox)
	limits    string   // how Limits are enforced, for LimitsReport
	release   func()   // ends the egress's admission of id
	dir       string   // per-agent host directory
	hold      *os.File // dir, flocked while the sandbox lives (see CleanStale)
	home      string   // dir/home, mounted at HomeDir
	workspace string   // host directory mounted at WorkspaceDir
	cg        *cgroup

	mu      sync.Mutex
	running map[*Cmd]struct{}
	closed  bool
}

// New checks p and prepares a sandbox: the per-agent directory (under
// TempRoot), the workspace copy when p.Hide is set, and the cgroup when
// p.Limits asks for one. It starts nothing. The caller must Close it.
//
// Under a root launcher the sandbox runs as an unprivileged host uid (see
// chooseIdentity): its own from p.UIDs, or a live workspace's owner. Its
// directories are handed to that uid, and every host path it mounts must
// be reachable by it. New returns an *UnsupportedError when limits are
// asked for and the host does not delegate them.
func New(ctx context.Context, p Policy) (*Sandbox, error) {
	s := &Sandbox{policy: p, running: map[*Cmd]struct{}{}, release: func() {}}
	var err error
	if s.bwrap, err = exec.LookPath(orDefault(p.Bwrap, "bwrap")); err != nil {
		return nil, fmt.Errorf("sandbox: bubblewrap: %w", err)
	}
	if err := validatePolicy(p); err != nil {
		return nil, err
	}
	if s.id, err = chooseIdentity(p); err != nil {
		return nil, err
	}
	s.devs, s.devNote = devSource()
	s.divide = s.id.own() && canShareUserLimits()
	if err := s.checkReachable(); err != nil {
		s.id.release()
		return nil, err
	}
	if s.exe, err = executable(p.Executable); err != nil {
		s.id.release()
		return nil, err
	}
	if s.dir, s.hold, err = heldir.Make(orDefault(p.TempRoot, "/tmp"), agentDirPrefix); err != nil {
		s.exe.Close()
		s.id.release()
		return nil, fmt.Errorf("sandbox: per-agent directory: %w", err)
	}
	if err := s.prepare(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// checkReachable refuses host paths the sandbox's user could not mount:
// bubblewrap resolves them as that user.
func (s *Sandbox) checkReachable() error {
	p := s.policy
	for _, ro := range p.ReadOnly {
		if err := reachable(ro, s.id, mayRead); err != nil {
			return fmt.Errorf("sandbox: read-only mount %w; install it where an unprivileged user can read it", err)
		}
	}
	if p.Egress != nil {
		if err := reachable(p.Egress.dir, s.id, mayEnter); err != nil {
			return fmt.Errorf("sandbox: egress socket directory %w; give the egress a TempDir every user may enter", err)
		}
	}
	if p.Workspace != "" && len(p.Hide) == 0 {
		if err := reachable(p.Workspace, s.id, mayRead); err != nil {
			return fmt.Errorf("sandbox: workspace %w", err)
		}
	}
	if err := reachable(orDefault(p.TempRoot, "/tmp"), s.id, mayEnter); err != nil {
		return fmt.Errorf("sandbox: TempRoot %w; per-agent directories must be where every user may enter", err)
	}
	return nil
}

func (s *Sandbox) prepare(ctx context.Context) error {
	p := s.policy
	if !s.id.own() {
		// The sandbox's user may enter its directory (bubblewrap mounts
		// home and workspace from it) and nobody else may.
		if err := os.Chown(s.dir, os.Geteuid(), s.id.gid); err != nil {
			return fmt.Errorf("sandbox: per-agent directory: %w", err)
		}
		if err := os.Chmod(s.dir, 0o710); err != nil {
			return fmt.Errorf("sandbox: per-agent directory: %w", err)
		}
	}
	s.home = filepath.Join(s.dir, "home")
	if err := s.mkdirOwned(s.home); err != nil {
		return fmt.Errorf("sandbox: home: %w", err)
	}

	switch {
	case p.NoWorkspace:
	case p.Workspace == "":
		s.workspace = filepath.Join(s.dir, "workspace")
		if err := s.mkdirOwned(s.workspace); err != nil {
			return fmt.Errorf("sandbox: workspace: %w", err)
		}
	case len(p.Hide) > 0:
		s.workspace = filepath.Join(s.dir, "workspace")
		if err := copyWorkspace(ctx, p.Workspace, s.workspace, p.Hide, s.id); err != nil {
			return err
		}
	default:
		s.workspace = p.Workspace
	}
	if p.Egress != nil {
		s.release = p.Egress.admit(s.id.uid)
	}

	l := p.Limits.withDefaults()
	cg, err := newCgroup(l)
	var ue *UnsupportedError
	switch {
	case err == nil:
		s.cg = cg
		s.limits = fmt.Sprintf("cgroup %s (%s for the whole sandbox), and rlimits per process", cg.path, l.describe())
	case errors.As(err, &ue) && p.Limits.Parent == "":
		// No delegated cgroup: the rlimits alone, as the report says.
		s.limits = fmt.Sprintf("rlimits only (%s; memory per process) without a delegated cgroup: %s", l.describe(), ue.Reason)
	default:
		return err
	}
	return nil
}

// mkdirOwned creates dir (mode 0700) owned by the sandbox's user.
func (s *Sandbox) mkdirOwned(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	if s.id.own() {
		return nil
	}
	return os.Chown(dir, s.id.uid, s.id.gid)
}

// Home returns the host path of the per-agent directory the sandbox sees
// as HomeDir (/tmp). Files put there before a command starts (an agent's
// configuration) are visible to it.
func (s *Sandbox) Home() string { return s.home }

// LimitsReport says how the sandbox's limits are enforced: by a cgroup and
// rlimits, or by rlimits alone and why (the smoke gate reports it).
func (s *Sandbox) LimitsReport() string { return s.limits }

// Workspace returns the host path mounted at WorkspaceDir: Policy.Workspace
// itself, or the private copy (or fresh directory) inside the per-agent
// directory, which Close removes; "" with Policy.NoWorkspace.
func (s *Sandbox) Workspace() string { return s.workspace }

// defaultDir is where a command starts unless it says: WorkspaceDir, or
// HomeDir with Policy.NoWorkspace.
func (s *Sandbox) defaultDir() string {
	if s.policy.NoWorkspace {
		return HomeDir
	}
	return WorkspaceDir
}

// Close kills every command still running in the sandbox (and, with
// limits, every process left in its cgroup), waits for them to exit and
// removes the per-agent directory. It is safe to call more than once and
// from any goroutine, e.g. the runner's shutdown path.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	s.closed = true
	running := slices.Collect(maps.Keys(s.running))
	s.mu.Unlock()
	for _, c := range running {
		c.kill()
	}
	var errs []error
	if s.cg != nil {
		errs = append(errs, s.cg.kill())
	}
	for _, c := range running {
		<-c.done
	}
	if s.cg != nil {
		errs = append(errs, s.cg.remove())
		s.cg = nil
	}
	if s.dir != "" {
		errs = append(errs, removeAll(s.dir))
	}
	if s.hold != nil {
		s.hold.Close() // a second Close gets os.ErrClosed, harmlessly
	}
	if s.exe != nil {
		s.exe.Close()
	}
	s.release()
	s.id.release()
	return errors.Join(errs...)
}

// removeAll removes dir, retrying briefly: processes of a killed sandbox
// may still be exiting (the kernel tears a PID namespace down
// asynchronously) and create files meanwhile. A directory the agent made
// unreadable or unwritable (chmod 000, 500) is given back to its owner
// first: an unprivileged launcher is the owner of what its sandboxes
// wrote, not root, and cannot remove it otherwise.
func removeAll(dir string) error {
	var err error
	for range 20 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		if errors.Is(err, fs.ErrPermission) {
			openUp(dir)
			continue
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("sandbox: remove %s: %w", dir, err)
}

// openUp gives the owner full access to dir and every directory under it
// (never following a link), so that they can be listed and emptied.
func openUp(dir string) {
	var st unix.Stat_t
	if unix.Lstat(dir, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return
	}
	if st.Mode&0o700 != 0o700 {
		unix.Chmod(dir, st.Mode&0o7777|0o700)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Type().IsDir() {
			openUp(filepath.Join(dir, e.Name()))
		}
	}
}

// Cmd is a command to run inside a sandbox, in namespaces of its own.
// Set the exported fields before Start.
type Cmd struct {
	// Args is the command line as seen inside. An Args[0] without a slash
	// is looked up in the sandbox's PATH.
	Args []string
	// Env adds variables for this command only; Policy.Egress's still win.
	Env map[string]string
	// Dir is the working directory inside; empty means WorkspaceDir (HomeDir
	// with Policy.NoWorkspace).
	Dir string
	// Stdin, Stdout and Stderr are as for exec.Cmd, but the command only
	// ever gets pipes, never the launcher's files: an *os.File is copied
	// through a pipe like any reader or writer (reopened through
	// /proc/self/fd, the launcher's own file could be read, truncated or
	// rewritten). A nil Stdin reads as empty, a nil Stdout or Stderr
	// discards.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Services are servers started beside the command, in the same
	// sandbox, at the moment it starts, so that neither waits for the
	// other's start-up. They run under pairbench's init (Policy.Executable)
	// and end with the command: SIGTERM when it exits, SIGKILL two seconds
	// later. Their output goes to Stderr.
	Services []Service
	// Expose makes TCP servers the command starts inside reachable from
	// the host through unix sockets in the per-agent directory, never
	// through a TCP port outside (see Expose). They run under the init.
	Expose []Expose
	// ExtraFiles are given to the command as descriptors 3, 4, ... (as
	// exec.Cmd.ExtraFiles): the two pipes of Chromium's
	// --remote-debugging-pipe, for one. The command then runs under the
	// init. Start gives the command copies; the caller closes its own.
	ExtraFiles []*os.File

	ctx      context.Context
	sb       *Sandbox
	cmd      *exec.Cmd
	lifeline *os.File // the lifeline's write end, once started (see Start)
	mu       sync.Mutex
	proc     *os.Process // bubblewrap; guarded by mu
	pidfd    int         // the sandbox's PID 1, or -1; guarded by mu
	// initPid is PID 1's host pid (0 before it is known); guarded by mu.
	initPid int
	// reported is set once bubblewrap's --info-fd report was read (or
	// never came); guarded by mu.
	reported bool
	done     chan struct{}
	err      error
}

// loopback returns 127.0.0.1:port.
func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// Command returns the Cmd that runs name with args inside s. Cancelling
// ctx kills bubblewrap with SIGKILL, which ends every process inside.
func (s *Sandbox) Command(ctx context.Context, name string, args ...string) *Cmd {
	return &Cmd{Args: append([]string{name}, args...), ctx: ctx, sb: s, pidfd: -1}
}

// Start starts bubblewrap. Its own environment is empty and its options,
// environment values included, travel through a sealed memory file
// (--args): the sandbox's PID 1 (bubblewrap) shows neither the host's
// variables nor any value of Env, only the command line itself.
func (c *Cmd) Start() error {
	s := c.sb
	if c.cmd != nil {
		return errors.New("sandbox: command already started")
	}
	// What the caller put in the per-agent directory since New is the
	// launcher's; the sandbox's user gets it.
	if err := handOver(s.home, s.id); err != nil {
		return err
	}
	cmdline, files, err := s.bwrapFiles(c)
	defer func() { closeFiles(files) }()
	if err != nil {
		return err
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("sandbox: info pipe: %w", err)
	}
	files[1] = infoW
	// bubblewrap holds a read end of its info pipe too: writing its report
	// must never fail (dying of SIGPIPE once the launcher has gone would
	// strand its child, still waiting for it to finish the setup).
	files[infoReaderFD-3] = infoR
	files[initFD-3] = s.exe
	// The lifeline: its write end is the launcher's alone (close-on-exec,
	// never passed on), held until bubblewrap has exited; the init ends
	// the sandbox once the read end reads end of file, when the launcher
	// has gone, however it died.
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("sandbox: lifeline: %w", err)
	}
	files[lifelineFD-3] = lifeR
	defer func() {
		if c.lifeline == nil {
			lifeW.Close() // not started
		}
	}()

	cmd := exec.CommandContext(c.ctx, s.bwrap, append([]string{"--args", "3", "--info-fd", "4", "--"}, cmdline...)...)
	cmd.Env = []string{} // nothing from the host, not even PATH
	stdin, err := feedStdin(c.Stdin)
	if err != nil {
		return err
	}
	defer stdin.Close() // the child's copy is its own
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, throughPipe(c.Stdout), throughPipe(c.Stderr)
	cmd.ExtraFiles = files
	cmd.Cancel = func() error { // exec has set cmd.Process by now
		// Killing bubblewrap before it has reported PID 1 would strand a
		// PID 1 still in its setup, blocked forever waiting for it. Start
		// kills both once the report is in (and exec kills bubblewrap
		// WaitDelay later should the report never come).
		c.mu.Lock()
		reported := c.reported
		c.mu.Unlock()
		if !reported {
			return nil
		}
		c.killInit()
		return cmd.Process.Kill()
	}
	cmd.WaitDelay = 2 * time.Second
	cmd.Dir = "/"
	// No parent-death signal for bubblewrap (nor --die-with-parent): one
	// that killed it during its setup, before it lets its child go on,
	// would strand that child, blocked for good where no lifeline can
	// reach it. bubblewrap ends with the sandbox's PID 1 instead, and the
	// init ends with the lifeline.
	//
	// bubblewrap itself, and so every process it starts, runs as the
	// sandbox's unprivileged user: its user namespace maps the sandbox's
	// uid to that user, never to root.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.id.credential()}
	if s.divide {
		shareUserLimits(cmd)
	}
	if s.cg != nil {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = s.cg.fd()
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("sandbox: closed")
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("sandbox: start bubblewrap: %w", err)
	}
	infoW.Close()
	c.cmd = cmd
	c.lifeline = lifeW
	c.done = make(chan struct{})
	c.mu.Lock()
	c.proc = cmd.Process
	c.mu.Unlock()
	pid, pidfd := sandboxInit(infoR)
	c.mu.Lock()
	c.initPid, c.pidfd = pid, pidfd
	c.reported = true
	c.mu.Unlock()
	if c.ctx.Err() != nil {
		c.kill() // cancelled while PID 1 was not known yet
	}
	s.running[c] = struct{}{}
	go func() {
		c.err = cmd.Wait()
		lifeW.Close() // ends a PID 1 that outlived bubblewrap
		c.waitInit()
		s.mu.Lock()
		delete(s.running, c)
		s.mu.Unlock()
		c.mu.Lock()
		if c.pidfd >= 0 {
			unix.Close(c.pidfd)
			c.pidfd = -1
		}
		c.mu.Unlock()
		close(c.done)
	}()
	return nil
}

// throughPipe makes exec copy w's output through a pipe of its own, also
// when w is a file (exec would pass a file's descriptor as it is); nil
// discards.
func throughPipe(w io.Writer) io.Writer {
	switch w.(type) {
	case nil:
		return io.Discard
	case *os.File:
		return struct{ io.Writer }{w}
	}
	return w
}

// feedStdin returns the read end of a pipe that r is copied into (nothing,
// for a nil r) and that is closed once r ends. Unlike exec's own copying
// it is never waited for: a reader that blocks (a terminal) must not hold
// Wait after the command has exited.
func feedStdin(r io.Reader) (*os.File, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: stdin pipe: %w", err)
	}
	if r == nil {
		pw.Close()
		return pr, nil
	}
	go func() {
		io.Copy(pw, r) // ends with EPIPE once the sandbox has gone
		pw.Close()
	}()
	return pr, nil
}

// sandboxInit reads bubblewrap's --info-fd report and returns the host pid
// of the sandbox's PID 1 and a pidfd for it, or 0 and -1 when bubblewrap
// exited without one. Killing
// PID 1 ends the whole PID namespace at once; killing only bubblewrap
// would leave a PID 1 still in bubblewrap's setup (before the init, and
// so its lifeline) waiting forever.
func sandboxInit(info io.Reader) (pid, pidfd int) {
	var report struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(info).Decode(&report); err != nil || report.ChildPid <= 0 {
		return 0, -1
	}
	fd, err := unix.PidfdOpen(report.ChildPid, 0)
	if err != nil {
		return 0, -1
	}
	return report.ChildPid, fd
}

// waitInit waits until the sandbox's PID 1 has exited, when it is known.
// The kernel lets it exit only once every other process of its PID
// namespace is gone, so then nothing of the sandbox runs. bubblewrap waits
// for it too, unless bubblewrap was killed first (kill, Close): then its
// exit said nothing of the processes still dying inside, and a Close that
// returned then left them running (without a delegated cgroup, which Close
// also waits on). A PID 1 that outlived bubblewrap ends with its lifeline;
// one that has not after initGrace is killed.
func (c *Cmd) waitInit() {
	c.mu.Lock()
	fd := c.pidfd // closed after this returns, by the same goroutine
	c.mu.Unlock()
	if fd < 0 {
		return
	}
	if !pollExited(fd, initGrace) {
		unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		pollExited(fd, -1)
	}
}

// initGrace is how long a sandbox's PID 1 may take to exit once its
// lifeline is closed before it is killed.
const initGrace = 10 * time.Second

// pollExited waits up to d (for ever when negative) for the process of
// pidfd fd to exit, and says whether it did.
func pollExited(fd int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		ms := -1
		if d >= 0 {
			ms = max(int(time.Until(deadline).Milliseconds()), 0)
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, ms)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return true // nothing to wait on
		}
		return n > 0
	}
}

// Wait waits for the command to exit. Its error is as exec.Cmd.Wait's: an
// *exec.ExitError carries the command's exit status (bubblewrap passes it
// on), or the context's kill.
func (c *Cmd) Wait() error {
	if c.cmd == nil {
		return errors.New("sandbox: command not started")
	}
	<-c.done
	return c.err
}

// Run starts the command and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// ProcessState returns bubblewrap's exit information (its resource usage
// includes every process of the sandbox), or nil before Wait returns.
func (c *Cmd) ProcessState() *os.ProcessState {
	if c.cmd == nil || c.done == nil {
		return nil
	}
	select {
	case <-c.done:
		return c.cmd.ProcessState
	default:
		return nil
	}
}

// hostUID returns the host uid the sandbox's PID 1 runs as, or -1 when it
// is not known (not started, or gone).
func (c *Cmd) hostUID() int {
	c.mu.Lock()
	pid := c.initPid
	c.mu.Unlock()
	if pid == 0 {
		return -1
	}
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d", pid), &st); err != nil {
		return -1
	}
	return int(st.Uid)
}

// Pid returns bubblewrap's process id on the host, or 0 before Start.
func (c *Cmd) Pid() int {
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// kill kills the sandbox's PID 1 (and with it every process inside) and
// bubblewrap.
func (c *Cmd) kill() {
	c.killInit()
	c.mu.Lock()
	proc := c.proc
	c.mu.Unlock()
	if proc != nil {
		proc.Kill()
	}
}

// killInit kills the sandbox's PID 1, when known.
func (c *Cmd) killInit() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pidfd >= 0 {
		unix.PidfdSendSignal(c.pidfd, unix.SIGKILL, nil, 0)
	}
}

// Descriptors bubblewrap is started with: --args, --info-fd, --seccomp,
// the init binary (started as /proc/self/fd/6, so it is never mounted and
// its directory need not be reachable from the sandbox's user), the read
// end of the lifeline (the init's -lifeline), a read end of the info
// pipe, then bwrapArgs' files from firstFileFD on.
const (
	initFD       = 6
	lifelineFD   = 7
	infoReaderFD = 8
	firstFileFD  = 9
)

// initPath is how the sandbox starts the init: bubblewrap's child still
// holds the binary's descriptor when it executes the command.
var initPath = "/proc/self/fd/" + strconv.Itoa(initFD)

// bwrapFiles returns what bubblewrap is started with for c, but for its
// info pipe and lifeline: the command line (after "--") and the files for
// descriptors 3 on: the sealed argument file (3), an empty slot for the
// caller's info pipe (4), the seccomp filter (5), the init binary (6, not
// to be closed by the caller), empty slots for the lifeline (7) and the
// info pipe's read end (8), then bwrapArgs' files from firstFileFD. The
// caller closes the files (closeFiles), also on error.
func (s *Sandbox) bwrapFiles(c *Cmd) (cmdline []string, files []*os.File, err error) {
	opts, cmdline, etc, err := s.bwrapArgs(c)
	files = append(make([]*os.File, firstFileFD-3), etc...)
	if err != nil {
		return nil, files, err
	}
	filter, err := seccompFilter()
	if err != nil {
		return nil, files, err
	}
	if filter != nil {
		opts = append(opts, "--seccomp", "5")
	}
	// The argument file is NUL-separated (bwrapArgs refuses NUL in values).
	if files[0], err = sealedFile("bwrap-args", []byte(strings.Join(opts, "\x00")+"\x00")); err != nil {
		return nil, files, err
	}
	if files[2], err = sealedFile("bwrap-seccomp", filter); err != nil {
		return nil, files, err
	}
	return cmdline, files, nil
}

// closeFiles closes every file of files that is set, but the init binary,
// which the sandbox keeps.
func closeFiles(files []*os.File) {
	for i, f := range files {
		if f != nil && i != initFD-3 {
			f.Close()
		}
	}
}

// bwrapArgs returns bubblewrap's options for c (for the argument file),
// the command line to run (bubblewrap takes it from its own argv) and the
// files the options name by descriptor, from firstFileFD on; the caller
// closes them, also on error.
func (s *Sandbox) bwrapArgs(c *Cmd) (opts, cmdline []string, files []*os.File, err error) {
	p := s.policy
	if len(c.Args) == 0 || c.Args[0] == "" {
		return nil, nil, nil, errors.New("sandbox: empty command")
	}
	a := []string{
		"--unshare-user", "--uid", fmt.Sprint(UID), "--gid", fmt.Sprint(GID),
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try",
		"--hostname", "sandbox",
		"--new-session",
		"--cap-drop", "ALL",
		"--clearenv",
		"--ro-bind", "/usr", "/usr",
	}
	if !p.AllowUserNamespaces {
		a = append(a, "--disable-userns")
	}
	a = append(a, rootLinks()...)
	a = append(a, "--proc", "/proc")
	for _, f := range procReadOnly {
		a = append(a, "--ro-bind-try", f, f)
	}
	a = append(a, devMounts(s.devs)...)
	for _, d := range etcDirs {
		a = append(a, "--ro-bind-try", d, d)
	}
	links := etcLinks()
	for _, name := range etcLinkable {
		if target, ok := links[name]; ok {
			a = append(a, "--symlink", target, name)
		}
	}
	if files, err = etcCopies(links); err != nil {
		return nil, nil, files, err
	}
	if files, err = policyFiles(files, p.Files); err != nil {
		return nil, nil, files, err
	}
	for i, f := range files {
		a = append(a, "--file", strconv.Itoa(firstFileFD+i), f.Name())
	}
	tmp, homeFiles, err := s.tmpMounts(firstFileFD + len(files))
	files = append(files, homeFiles...)
	if err != nil {
		return nil, nil, files, err
	}
	a = append(a, tmp...)
	for _, name := range slices.Sorted(maps.Keys(p.MemoryDirs)) {
		a = append(a, "--size", fmt.Sprint(p.MemoryDirs[name]), "--perms", "0700", "--tmpfs", filepath.Join(HomeDir, name))
	}
	a = append(a, "--perms", "0700", "--dir", shmDir) // /dev/shm, counted with /tmp
	if size := p.Limits.WorkspaceSize; size > 0 {
		a = append(a, "--size", fmt.Sprint(size), "--perms", "0700", "--tmpfs", WorkspaceDir)
	} else if !p.NoWorkspace {
		a = append(a, "--bind", s.workspace, WorkspaceDir)
		git, gitFiles, err := gitMounts(s.workspace, firstFileFD+len(files))
		if err != nil {
			return nil, nil, files, err
		}
		a, files = append(a, git...), append(files, gitFiles...)
	}
	for _, ro := range p.ReadOnly {
		a = append(a, "--ro-bind", ro, ro)
	}

	env := map[string]string{
		"HOME":   HomeDir,
		"TMPDIR": HomeDir,
		"PATH":   "/usr/local/bin:/usr/bin:/bin",
		"LANG":   "C.UTF-8",
	}
	maps.Copy(env, p.Env)
	maps.Copy(env, c.Env)
	cmdline = c.Args
	var initArgs []string
	if p.Egress != nil {
		host, inside := p.Egress.Mounts()
		a = append(a, "--ro-bind", host, inside)
		maps.Copy(env, p.Egress.Env())
		initArgs = p.Egress.InitArgs()
	}
	for _, k := range slices.Sorted(maps.Keys(InitOnlyEnv())) {
		if _, ok := env[k]; !ok { // the command's own value stays, for both
			env[k] = InitOnlyEnv()[k]
			initArgs = append(initArgs, "-unsetenv", k)
		}
	}
	initArgs = append(initArgs, rlimitArgs(p.Limits.withDefaults())...)
	if initArgs, err = s.serviceArgs(c, initArgs); err != nil {
		return nil, nil, files, err
	}
	if initArgs, err = s.exposeArgs(c, initArgs); err != nil {
		return nil, nil, files, err
	}
	if initArgs, files, err = extraFileArgs(c.ExtraFiles, initArgs, files); err != nil {
		return nil, nil, files, err
	}
	// Every command starts under pairbench's init, as the sandbox's PID 1
	// (--as-pid-1: there is no bubblewrap process inside). The init makes
	// itself undumpable, so nothing inside can read or write its memory or
	// take its descriptors and, through it, outlive the launcher; it closes
	// every descriptor it inherited that was not meant for the command.
	a = append(a, "--as-pid-1")
	initArgs = append(initArgs, "-lifeline", strconv.Itoa(lifelineFD)) // see Start
	cmdline = slices.Concat([]string{initPath, InitArg}, initArgs, []string{"--"}, c.Args)
	// The root (bubblewrap's tmpfs, /etc's copies with it) is read-only
	// once everything is mounted on it: the sandbox writes only to /tmp and
	// /workspace.
	a = append(a, "--remount-ro", "/dev", "--remount-ro", "/")
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if !envName().MatchString(k) {
			return nil, nil, files, fmt.Errorf("sandbox: bad environment variable name %q", k)
		}
		a = append(a, "--setenv", k, env[k])
	}
	a = append(a, "--chdir", orDefault(c.Dir, s.defaultDir()))
	for _, arg := range slices.Concat(a, cmdline) {
		// The argument file is NUL-separated: a NUL inside a value would
		// smuggle in bubblewrap options.
		if strings.ContainsRune(arg, 0) {
			return nil, nil, files, errors.New("sandbox: NUL byte in an argument or environment value")
		}
	}
	return a, cmdline, files, nil
}

// serviceArgs appends c's services to the init's arguments, refusing
// ports the egress relay already listens on.
func (s *Sandbox) serviceArgs(c *Cmd, initArgs []string) ([]string, error) {
	if len(c.Services) == 0 {
		return initArgs, nil
	}
	taken := map[int]bool{}
	if e := s.policy.Egress; e != nil {
		for _, port := range e.listenPorts() {
			taken[port] = true
		}
	}
	for _, svc := range c.Services {
		if err := svc.Check(); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		for _, port := range []int{svc.Port, svc.Backend} {
			if taken[port] {
				return nil, fmt.Errorf("sandbox: service %s: port %d is taken inside the sandbox", svc.Args[0], port)
			}
			taken[port] = true
		}
		b, err := json.Marshal(svc)
		if err != nil {
			return nil, fmt.Errorf("sandbox: service: %w", err)
		}
		initArgs = append(initArgs, "-service", string(b))
	}
	return initArgs, nil
}

// tmpMounts returns the mounts that make up /tmp: the per-agent directory
// itself, or with Limits.TmpSize a tmpfs of that size holding a copy of
// what the per-agent directory holds when the command starts (the agent's
// configuration), so that every byte written under /tmp counts against the
// size: bubblewrap cannot cap a bind mount, and a directory bound in from
// the host would be a way around the cap. Files are copied through
// descriptors (returned, numbered from fd on; the caller closes them),
// links as links; what else the directory holds is left out.
func (s *Sandbox) tmpMounts(fd int) ([]string, []*os.File, error) {
	size := s.policy.Limits.TmpSize
	if size <= 0 {
		return []string{"--bind", s.home, HomeDir}, nil, nil
	}
	a := []string{"--size", fmt.Sprint(size), "--perms", "0700", "--tmpfs", HomeDir}
	var files []*os.File
	root, err := os.OpenRoot(s.home)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: home: %w", err)
	}
	defer root.Close()
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || name == "." {
			return err
		}
		inside := path.Join(HomeDir, name)
		switch {
		case d.IsDir():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			a = append(a, "--perms", fmt.Sprintf("%04o", fi.Mode().Perm()), "--dir", inside)
		case d.Type().IsRegular():
			f, err := root.Open(name)
			if err != nil {
				return err
			}
			fi, err := f.Stat()
			if err != nil || !fi.Mode().IsRegular() {
				f.Close()
				return cmp.Or(err, fmt.Errorf("%s changed while it was copied", name))
			}
			files = append(files, f)
			a = append(a, "--perms", fmt.Sprintf("%04o", fi.Mode().Perm()), "--file", strconv.Itoa(fd+len(files)-1), inside)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := root.Readlink(name)
			if err != nil {
				return err
			}
			a = append(a, "--symlink", target, inside)
		}
		return nil
	})
	if err != nil {
		return nil, files, fmt.Errorf("sandbox: copy home into its /tmp: %w", err)
	}
	return a, files, nil
}

// procReadOnly are the /proc entries that reach beyond the sandbox's own
// namespaces (kernel tunables, sysrq, IRQ and bus settings, pressure
// triggers). They are mounted read-only: when the launcher runs as root
// the sandbox user is root to the host's file permission checks
// (capabilities dropped but uid 0), and a writable /proc/sys would let it
// change the host kernel's settings.
var procReadOnly = []string{
	"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs",
	"/proc/mtrr", "/proc/pressure", "/proc/acpi", "/proc/scsi", "/proc/driver",
}

// A sandbox's /etc holds only what name resolution, TLS trust and /usr's
// programs need, and an account list naming only the sandbox user:
//   - etcDirs, mounted read-only where they exist: TLS trust (certificates,
//     not /etc/ssl/private) and Debian's alternatives links into /usr;
//   - etcFiles, copied (bubblewrap --file) where they exist: small files a
//     mount each would cost more to set up than to copy;
//   - etcLinkable, of etcFiles, reproduced as the link it is on the host
//     when that link leads into /usr (see etcLinks).
var (
	etcDirs = []string{
		"/etc/ssl/certs", "/etc/ca-certificates", "/etc/pki", "/etc/crypto-policies", "/etc/alternatives",
	}
	etcFiles = []string{
		"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
		"/etc/ld.so.cache", "/etc/localtime", "/etc/ssl/openssl.cnf",
	}
	etcLinkable = []string{"/etc/localtime"}
)

// etcLinks returns, by path, the target of each entry of etcLinkable that
// is a link on the host whose target and the file it resolves to both lie
// in /usr, which the sandbox sees as the host does. A copy of
// /etc/localtime holds the zone's rules but not its name: ICU (Chromium's,
// Node's) then looks for the name by comparing the files under
// /usr/share/zoneinfo with it, some 1,400 entries opened in each process
// that starts, where the link names the zone at once.
func etcLinks() map[string]string {
	links := map[string]string{}
	for _, name := range etcLinkable {
		target, err := os.Readlink(name)
		if err != nil {
			continue // not a link, or absent: copied, or left out, as before
		}
		abs := target
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(filepath.Dir(name), abs)
		}
		real, err := filepath.EvalSymlinks(name)
		if err == nil && underUsr(filepath.Clean(abs)) && underUsr(real) {
			links[name] = target
		}
	}
	return links
}

// underUsr reports whether path lies below /usr.
func underUsr(path string) bool { return strings.HasPrefix(path, "/usr/") }

// etcCopies opens what bubblewrap copies into /etc: each existing regular
// file of etcFiles not in links (a link is followed) and the sandbox's own
// passwd and group. Each file's Name is its path inside.
func etcCopies(links map[string]string) ([]*os.File, error) {
	var files []*os.File
	for _, name := range etcFiles {
		if _, ok := links[name]; ok {
			continue
		}
		f, err := os.Open(name)
		if err != nil {
			continue // absent or unreadable: the sandbox goes without, as before
		}
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			f.Close()
			continue
		}
		files = append(files, f)
	}
	// passwd and group name only the sandbox user, so tools that look the
	// user up work without the host's account list.
	accounts := map[string]string{
		"/etc/passwd": fmt.Sprintf("agent:x:%d:%d:agent:%s:/bin/sh\n", UID, GID, HomeDir),
		"/etc/group":  fmt.Sprintf("agent:x:%d:\n", GID),
	}
	for _, name := range []string{"/etc/passwd", "/etc/group"} {
		f, err := sealedFile(name, []byte(accounts[name]))
		if err != nil {
			return files, err
		}
		files = append(files, f)
	}
	return files, nil
}

// rootLinks reproduces the host's /bin, /sbin, /lib* entries: a symbolic
// link (merged /usr) stays a link, a real directory is mounted read-only.
func rootLinks() []string {
	var a []string
	for _, name := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(name)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(name); err == nil {
				a = append(a, "--symlink", target, name)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", name, name)
		}
	}
	return a
}

// sealedFile returns a memory file holding data, sealed against writes,
// positioned at its start.
func sealedFile(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: %s: %w", name, err)
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: seal %s: %w", name, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: %s: %w", name, err)
	}
	return f, nil
}

// validatePolicy refuses a policy that would expose what must stay hidden.
func validatePolicy(p Policy) error {
	if err := p.UIDs.validate(); err != nil {
		return err
	}
	if err := p.Limits.validate(); err != nil {
		return err
	}
	if p.NoWorkspace && (p.Workspace != "" || len(p.Hide) > 0) {
		return errors.New("sandbox: NoWorkspace with a Workspace or Hide")
	}
	if p.Limits.WorkspaceSize > 0 && (p.NoWorkspace || p.Workspace != "") {
		return errors.New("sandbox: Limits.WorkspaceSize caps a fresh workspace, not NoWorkspace or a Workspace")
	}
	if err := checkFiles(p.Files); err != nil {
		return err
	}
	for name, size := range p.MemoryDirs {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || name == filepath.Base(shmDir) {
			return fmt.Errorf("sandbox: memory directory %q: want a plain name in HomeDir", name)
		}
		if size <= 0 {
			return fmt.Errorf("sandbox: memory directory %s: size %d, want a positive number of bytes", name, size)
		}
	}
	for _, h := range p.Hide {
		if !doublestar.ValidatePattern(h) {
			return fmt.Errorf("sandbox: hide pattern %q is not a valid pattern", h)
		}
	}
	if p.Workspace != "" {
		if err := requireDir(p.Workspace); err != nil {
			return fmt.Errorf("sandbox: workspace: %w", err)
		}
	}
	for k, v := range p.Env {
		if !envName().MatchString(k) {
			return fmt.Errorf("sandbox: bad environment variable name %q", k)
		}
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("sandbox: environment variable %s holds a NUL byte", k)
		}
	}
	home, _ := os.UserHomeDir()
	for _, ro := range p.ReadOnly {
		if err := checkReadOnly(ro, home); err != nil {
			return err
		}
		if p.Workspace != "" {
			if err := outsideWorkspace(ro, p.Workspace); err != nil {
				return err
			}
		}
	}
	return nil
}

func requireDir(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%s: not an absolute path", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: not a directory", path)
	}
	return nil
}

// systemDirs may never be mounted whole as a "program".
var systemDirs = []string{"/", "/etc", "/proc", "/sys", "/dev", "/run", "/var", "/tmp", "/root", "/home", "/boot", "/mnt", "/media", "/srv", "/opt", "/usr/local", "/snap"}

// checkReadOnly refuses a ReadOnly path that is not a clean absolute path
// to an existing file or directory, or that is an install prefix or
// system directory rather than one program.
func checkReadOnly(path, home string) error {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return fmt.Errorf("sandbox: read-only mount %q: want a clean absolute path", path)
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("sandbox: read-only mount: %w", err)
	}
	if slices.Contains(systemDirs, path) || path == "/usr" {
		return fmt.Errorf("sandbox: read-only mount %s: a system directory, not a program", path)
	}
	if home != "" && (path == home || strings.HasPrefix(home+"/", path+"/")) {
		return fmt.Errorf("sandbox: read-only mount %s: the home directory or one of its parents", path)
	}
	if home != "" {
		for _, prefix := range []string{".local", ".nvm", ".npm-global", ".volta", ".bun", ".deno", ".cargo", "go", ".config", ".cache"} {
			if path == filepath.Join(home, prefix) {
				return fmt.Errorf("sandbox: read-only mount %s: an install prefix; mount the binary and its package directory instead", path)
			}
		}
	}
	return nil
}

// outsideWorkspace refuses a read-only mount that the workspace reaches or
// that reaches the workspace: a program inside is writable through
// /workspace (and a link the agent leaves in its place would make the next
// run mount the link's target), and one holding the workspace shows the
// live worktree, hidden files and all. Both paths are compared as the
// kernel resolves them (links followed) and by identity (device and inode)
// up to the root, so a link or another name for the same directory does
// not get one past.
func outsideWorkspace(ro, workspace string) error {
	refuse := func() error {
		return fmt.Errorf("sandbox: read-only mount %s: inside the workspace %s or holding it; the agent could write it through /workspace (install the program outside)", ro, workspace)
	}
	r, err := filepath.EvalSymlinks(ro)
	if err != nil {
		return fmt.Errorf("sandbox: read-only mount: %w", err)
	}
	w, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return fmt.Errorf("sandbox: workspace: %w", err)
	}
	if within(r, w) || within(w, r) {
		return refuse()
	}
	if sameAncestor(r, w) || sameAncestor(w, r) {
		return refuse()
	}
	return nil
}

// within reports whether path is dir or under it (both clean and absolute).
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// sameAncestor reports whether path or one of its ancestors is the very
// directory dir is (same device and inode).
func sameAncestor(path, dir string) bool {
	var d unix.Stat_t
	if unix.Stat(dir, &d) != nil {
		return false
	}
	for p := path; ; p = filepath.Dir(p) {
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil && st.Dev == d.Dev && st.Ino == d.Ino {
			return true
		}
		if p == "/" || p == "." {
			return false
		}
	}
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
