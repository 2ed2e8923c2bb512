#!/usr/bin/env bash
# Installs what pairbench's demo and tests need and the machine lacks:
# Debian packages, the pinned Node tools (under tools/node_modules) and the
# Go-built test S3 server (under tools/bin). Safe to run again: each step is
# skipped when what it installs is already there at the pinned version.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

say() { printf 'setup: %s\n' "$*" >&2; }

apt_pkgs=()
command -v bwrap >/dev/null 2>&1 || apt_pkgs+=(bubblewrap)
# Chromium at Debian's path, or where PAIRBENCH_CHROMIUM says (pairbench's
# --chromium default). Ubuntu's chromium package is a stub that installs the
# snap, which cannot run inside pairbench's sandbox: refuse it, saying so.
chromium="${PAIRBENCH_CHROMIUM:-/usr/lib/chromium/chromium}"
if ! [ -x "$chromium" ]; then
  os_id="$(. "${PAIRBENCH_OS_RELEASE:-/etc/os-release}" 2>/dev/null && echo "${ID:-}")" || os_id=""
  if [ "$os_id" = ubuntu ]; then
    say "no Chromium at $chromium, and Ubuntu's chromium package installs the snap, which cannot run in pairbench's sandbox: install a Chromium that is not a snap (Debian's chromium .deb puts it at /usr/lib/chromium/chromium) and run setup again, or set PAIRBENCH_CHROMIUM to its binary (docs/runners.md)"
    exit 1
  fi
  apt_pkgs+=(chromium)
fi
command -v npm >/dev/null 2>&1 || apt_pkgs+=(npm)
command -v git >/dev/null 2>&1 || apt_pkgs+=(git)
command -v ip >/dev/null 2>&1 || apt_pkgs+=(iproute2)
command -v curl >/dev/null 2>&1 || apt_pkgs+=(curl) # for the sandbox's network escape probes
command -v flock >/dev/null 2>&1 || apt_pkgs+=(util-linux)
[ -x /usr/sbin/setcap ] || apt_pkgs+=(libcap2-bin) # setcap(8), for the sandbox's setuid escape test
# srt (@anthropic-ai/sandbox-runtime), the sandbox benchmark's baseline, needs both.
command -v socat >/dev/null 2>&1 || apt_pkgs+=(socat)
command -v rg >/dev/null 2>&1 || apt_pkgs+=(ripgrep)
# The PR comment is rendered through GitHub's own Markdown renderer in a test (viewer).
command -v cmark-gfm >/dev/null 2>&1 || apt_pkgs+=(cmark-gfm)
# The service's state tests start a real PostgreSQL server (package
# state/statetest); Debian keeps its binaries under /usr/lib/postgresql.
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || apt_pkgs+=(postgresql)
if [ ${#apt_pkgs[@]} -gt 0 ]; then
  as_root=()
  if [ "$(id -u)" -ne 0 ]; then
    # A runner user with password-less sudo (as on many CI runners) installs
    # them; anyone else is told what to run.
    if ! sudo -n true 2>/dev/null; then
      say "missing Debian packages: ${apt_pkgs[*]}; run: sudo apt-get install -y ${apt_pkgs[*]}"
      exit 1
    fi
    as_root=(sudo -n)
  fi
  say "installing ${apt_pkgs[*]}"
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_pkgs[@]}" >/dev/null
fi

# Node tools, pinned in tools/package.json and, with every transitive
# dependency, in tools/package-lock.json. The stamp records which lock was
# installed, so an edit reinstalls.
stamp=tools/node_modules/.pairbench-stamp
want=$(cat tools/package.json tools/package-lock.json | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing pinned Node tools into tools/node_modules"
  (cd tools && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$want" >"$stamp"
fi

# versitygw, a real S3 server for the artifact store's tests; the GitHub
# Action sets PAIRBENCH_SETUP_TEST_TOOLS=0, as a bench does not need it.
versitygw_version=v1.8.0
if [ "${PAIRBENCH_SETUP_TEST_TOOLS:-1}" != 0 ] && [ "$(cat tools/bin/.versitygw 2>/dev/null)" != "$versitygw_version" ]; then
  say "building versitygw $versitygw_version into tools/bin (about a minute)"
  GOBIN="$root/tools/bin" go install "github.com/versity/versitygw/cmd/versitygw@$versitygw_version"
  echo "$versitygw_version" >tools/bin/.versitygw
fi

# actionlint, for the workflow and Action tests. Built with its own module
# graph: v1.7.12 does not compile against the go.yaml.in/yaml/v4 v4.0.0 this
# module's graph selects.
actionlint_version=v1.7.12
if [ "${PAIRBENCH_SETUP_TEST_TOOLS:-1}" != 0 ] && [ "$(cat tools/bin/.actionlint 2>/dev/null)" != "$actionlint_version" ]; then
  say "building actionlint $actionlint_version into tools/bin"
  GOBIN="$root/tools/bin" go install "github.com/rhysd/actionlint/cmd/actionlint@$actionlint_version"
  echo "$actionlint_version" >tools/bin/.actionlint
fi
