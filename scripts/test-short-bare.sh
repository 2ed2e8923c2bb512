#!/usr/bin/env bash
# Runs the short test lane (go test -short ./...) as a machine without the
# real stack would: Chromium, bubblewrap and Node replaced by a program that
# fails, tools/node_modules and tools/bin empty. Every test that needs one
# of them must skip (realstack.Need); one that fails here uses the stack
# without saying so. It needs root (a mount namespace of its own, so nothing
# outside it changes); extra arguments go to go test (default ./...).
# docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
	echo "test-short-bare: needs root, for a mount namespace of its own" >&2
	exit 2
fi
stub=$(mktemp)
trap 'rm -f "$stub"' EXIT
printf '#!/bin/sh\necho "hidden by test-short-bare: $0" >&2\nexit 127\n' >"$stub"
chmod 755 "$stub"
[ $# -gt 0 ] || set -- ./...
exec unshare --mount --propagation private bash -c '
set -e
stub=$1; shift
for p in /usr/lib/chromium/chromium "$(command -v bwrap || true)" "$(command -v node || true)"; do
	[ -n "$p" ] && [ -e "$p" ] && mount --bind "$stub" "$p"
done
for d in tools/node_modules tools/bin; do
	[ -e "$d" ] && mount -t tmpfs tmpfs "$(readlink -f "$d")"
done
exec go test -short -count=1 -parallel 4 "$@"
' test-short-bare "$stub" "$@"
