#!/usr/bin/env bash
# Runs the sandbox self-check before any agent starts, and fails with its
# one-line reason.
source "$GITHUB_ACTION_PATH/action/lib.sh"
drop_secrets
out="$state/sandbox-check.txt"
if "$PB_BIN" sandbox check >"$out" 2>&1; then
  cat "$out"
  exit 0
fi
fail "$(tail -n 1 "$out")"
