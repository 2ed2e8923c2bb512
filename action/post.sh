#!/usr/bin/env bash
# Posts the verdict (or, with PB_FAILURE=true, that the bench failed) on the
# pull request as a sticky comment and a "bench: <label>" label, through
# pairbench post (package bot, the service's own code). The token stays in
# GITHUB_TOKEN.
source "$GITHUB_ACTION_PATH/action/lib.sh"
want pr "${PB_PR:-}" '^[1-9][0-9]{0,9}$' "a pull request number"
want head-sha "${PB_HEAD_SHA:-}" '^[0-9a-f]{40}$' "a full commit id"
want GITHUB_REPOSITORY "${GITHUB_REPOSITORY:-}" '^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$'
args=(post --repo "$GITHUB_REPOSITORY" --pr "$PB_PR" --sha "$PB_HEAD_SHA")
if [ "${PB_FAILURE:-}" = true ]; then
  reason="the bench failed before a verdict"
  [ ! -s "$state/failure.txt" ] || reason="$(head -c 4000 "$state/failure.txt")"
  if [ -n "${GITHUB_SERVER_URL:-}" ] && [ -n "${GITHUB_RUN_ID:-}" ]; then
    reason="$reason ($GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID)"
  fi
  args+=(--run-id "${PB_RUN_ID:-}" --failure "$reason")
else
  args+=(--report "$PB_REPORT_DIR")
  case "${PB_REPORT_URL:-}" in http://* | https://*) args+=(--link "$PB_REPORT_URL") ;; esac
fi
"$PB_BIN" "${args[@]}"
