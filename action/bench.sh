#!/usr/bin/env bash
# The Action's main step: plan, run (or run one shard), merge and report,
# or report, as PB_MODE says. Inputs arrive in PB_* variables; outputs go to
# GITHUB_OUTPUT, the Markdown verdict to GITHUB_STEP_SUMMARY.
source "$GITHUB_ACTION_PATH/action/lib.sh"

mode="${PB_MODE:-run}"
want mode "$mode" '^(run|plan|merge-and-report|report)$' "run, plan, merge-and-report or report"
run_id="${PB_RUN_ID:-}"
[ -n "$run_id" ] || run_id="gh-${GITHUB_RUN_ID:?GITHUB_RUN_ID is not set}"
want run-id "$run_id" '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$' "letters, digits, dots, dashes and underscores"
set_output run-id "$run_id"
store="$(store_location)"
# resume: the run named by run-id is resumed from the store (topped up
# with more pairs), never planned afresh.
want resume "${PB_RESUME:-false}" '^(true|false)$' "true or false"
if [ "${PB_RESUME:-false}" = true ]; then
  [ "$mode" = run ] || [ "$mode" = plan ] || fail "input resume is for modes run and plan: mode $mode resumes nothing"
  [ -n "${PB_RUN_ID:-}" ] || fail "input resume needs run-id: the run to resume (without it the run id is a new one, gh-<workflow run id>)"
  [ -n "$store" ] || fail "input resume needs the artifact store (s3-bucket) the run is in: a run is resumed from there"
fi
runs_dir="$state/runs"
mkdir -p "$runs_dir"

# run_pairbench runs pairbench with "$@", workflow commands off, copying its
# stderr to a file too; on failure it fails with pairbench's error: its
# first "pairbench: " line and the indented lines that go on with it (a
# registry's problems, each file:line).
run_pairbench() {
  local errlog="$state/stderr.txt" rc=0 reason
  quiet_commands "$PB_BIN" "$@" 2> >(tee "$errlog" >&2) || rc=$?
  wait # for tee
  if [ "$rc" -eq 3 ]; then
    # The fail-on gate: the report is written; the job fails once the
    # summary, outputs and artifact are done (finish).
    gate_failed="$(grep -m 1 '^pairbench: --fail-on: ' "$errlog" || true)"
    gate_failed="${gate_failed#pairbench: --fail-on: }"
    [ -n "$gate_failed" ] || gate_failed="a label named in fail-on"
    return 0
  fi
  if [ "$rc" -ne 0 ]; then
    reason="$(awk '/^pairbench: / && !seen { seen = 1; print; next } seen && /^  / { print; next } seen { exit }' "$errlog")"
    [ -n "$reason" ] || reason="$(tail -n 1 "$errlog")"
    fail "pairbench $1 failed (exit $rc): ${reason#pairbench: }"
  fi
}

# bench_args builds the flags of pairbench run from the inputs.
bench_args() {
  want registry "${PB_REGISTRY:-.}" '^[^-]' "a directory path"
  [ -d "${PB_REGISTRY:-.}" ] || fail "registry ${PB_REGISTRY:-.} is not a directory in the workspace"
  want pairs "${PB_PAIRS:-10}" '^([1-9][0-9]{0,4}|auto)$' "a whole number or auto"
  want slots "${PB_SLOTS:-2}" '^[1-9][0-9]{0,2}$' "a whole number"
  want agent "${PB_AGENT:-pi}" '^[a-z][a-z0-9-]{0,39}$' "pi, claude-code or codex"
  want model "${PB_MODEL:-scripted}" '^[A-Za-z0-9][A-Za-z0-9._:/-]*$' "scripted or provider/id"
  args=(run "${PB_REGISTRY:-.}" --run-id "$run_id" --runs-dir "$runs_dir"
    --pairs "${PB_PAIRS:-10}" --slots "${PB_SLOTS:-2}" --agent "${PB_AGENT:-pi}" --model "${PB_MODEL:-scripted}"
    --log-format json)
  if [ -n "${PB_EFFECT:-}" ]; then
    want effect "$PB_EFFECT" '^([0-9]+(\.[0-9]+)?x|\+?[0-9]+(\.[0-9]+)?pp)$' "a speedup such as 1.5x or an accuracy gain such as +20pp"
    [ "${PB_PAIRS:-10}" = auto ] || fail "input effect is what pairs auto plans for: set pairs to auto, or leave effect empty"
    args+=(--effect "$PB_EFFECT")
  fi
  if [ -n "${PB_LOOKS:-}" ]; then want looks "$PB_LOOKS" '^([1-9]|10)$' "a whole number from 1 to 10"; args+=(--looks "$PB_LOOKS"); fi
  if [ -n "${PB_WEBMCP:-}" ]; then want webmcp "$PB_WEBMCP" '^(native|polyfill)$' "native or polyfill"; args+=(--webmcp "$PB_WEBMCP"); fi
  local intents="${PB_INTENTS:-}" in
  want intents "$intents" '^[A-Za-z0-9._, -]*$' "ids or domains separated by commas or spaces"
  for in in ${intents//,/ }; do
    args+=(--intent "$in")
  done
  # With a base, the changes choose each domain's comparison: of the
  # domains they touch, or of the intents named.
  local base="${PB_BASE:-}"
  if [ -n "$base" ] && [ "$base" != none ]; then
    changes_args "$base"
  fi
  local number='^[0-9]+(\.[0-9]+)?$'
  if [ -n "${PB_TIME_CAP:-}" ]; then want time-cap "$PB_TIME_CAP" "$number"; args+=(--time-cap "$PB_TIME_CAP"); fi
  if [ -n "${PB_TURN_CAP:-}" ]; then want turn-cap "$PB_TURN_CAP" '^[1-9][0-9]*$'; args+=(--turn-cap "$PB_TURN_CAP"); fi
  if [ -n "${PB_SPEND_CAP:-}" ]; then want spend-cap "$PB_SPEND_CAP" "$number"; args+=(--spend-cap "$PB_SPEND_CAP"); fi
  if [ -n "${PB_START_DELAY:-}" ]; then want start-delay "$PB_START_DELAY" '^[0-9]+(\.[0-9]+)?(ms|s|m)?$'; args+=(--start-delay "$PB_START_DELAY"); fi
  if [ -n "${PB_SEED:-}" ]; then want seed "$PB_SEED" '^[1-9][0-9]{0,18}$'; args+=(--seed "$PB_SEED"); fi
  if [ "${PB_EXAMPLE_SITES:-false}" = true ]; then args+=(--example-sites); fi
  want browser "${PB_BROWSER:-local}" '^(local|kernel|cdp)$' "local, kernel or cdp"
  args+=(--browser "${PB_BROWSER:-local}")
  if [ "${PB_STEALTH:-false}" = true ]; then args+=(--stealth); fi
  if [ -n "${PB_CDP_CONFIG:-}" ]; then
    want cdp-config "$PB_CDP_CONFIG" '^[^-]' "a file path"
    [ -f "$PB_CDP_CONFIG" ] || fail "cdp-config $PB_CDP_CONFIG is not a file in the workspace"
    args+=(--cdp-config "$PB_CDP_CONFIG")
  fi
  if [ -n "${PB_KERNEL_URL:-}" ]; then
    want kernel-url "$PB_KERNEL_URL" '^https?://[A-Za-z0-9.:-]+(/[A-Za-z0-9._~/-]*)?$' "an http(s) URL"
    args+=(--kernel-url "$PB_KERNEL_URL")
  fi
  if [ -n "$store" ]; then args+=(--store "$store"); fi
  want allow-inconclusive "${PB_ALLOW_INCONCLUSIVE:-false}" '^(true|false)$' "true or false"
  if [ "${PB_ALLOW_INCONCLUSIVE:-false}" = true ]; then args+=(--allow-inconclusive); fi
  if [ "${PB_RESUME:-false}" = true ]; then args+=(--resume); fi
  return 0
}

# gate_args holds the fail-on flags of a command that writes the final
# report (none when fail-on is empty).
gate_args=()
gate_failed=""
if [ -n "${PB_FAIL_ON:-}" ]; then
  want fail-on "$PB_FAIL_ON" '^[a-z ,]+$' "labels separated by commas, such as less accurate,slower"
  gate_args=(--fail-on "$PB_FAIL_ON")
fi

# finish fails the job when the fail-on gate failed, after everything else
# was done.
finish() {
  [ -n "$gate_failed" ] || return 0
  set_output gate-failed "$gate_failed"
  fail "the fail-on gate failed: $gate_failed"
}

# changes_args adds --changes BASE: the pull request's changes since its
# base decide what is benched. The base commit is fetched when the checkout
# does not have it (a shallow clone); head, when given, must be the
# checked-out commit or a parent of it (a pull request's merge commit).
changes_args() {
  local base="$1" reg="${PB_REGISTRY:-.}" head="${PB_HEAD:-}"
  want base "$base" '^[A-Za-z0-9][A-Za-z0-9._/~^-]{0,199}$' "a git revision"
  git -C "$reg" rev-parse --git-dir >/dev/null 2>&1 || fail "registry $reg is not in a git checkout, so it has no base $base"
  if ! git -C "$reg" cat-file -e "$base^{commit}" 2>/dev/null; then
    git -C "$reg" fetch --quiet --no-tags --depth=1 origin "$base" || fail "base $base is not in the checkout and could not be fetched"
  fi
  # The changes are counted from where head branched from base (what the
  # pull request shows), so a shallow checkout is deepened until it holds
  # that commit.
  local depth
  for depth in 64 512 4096; do
    git -C "$reg" merge-base "$base" HEAD >/dev/null 2>&1 && break
    [ "$(git -C "$reg" rev-parse --is-shallow-repository)" = true ] || break
    git -C "$reg" fetch --quiet --no-tags --deepen="$depth" origin "$base" "$(git -C "$reg" rev-parse HEAD)" ||
      fail "the checkout does not reach where it branched from base $base, and could not be deepened"
  done
  if ! git -C "$reg" merge-base "$base" HEAD >/dev/null 2>&1 && [ "$(git -C "$reg" rev-parse --is-shallow-repository)" = true ]; then
    git -C "$reg" fetch --quiet --no-tags --unshallow origin "$base" ||
      fail "the checkout does not reach where it branched from base $base, and could not be unshallowed"
  fi
  if [ -n "$head" ]; then
    want head "$head" '^[0-9a-f]{7,64}$' "a commit SHA"
    local at
    at="$(git -C "$reg" rev-parse HEAD HEAD^1 HEAD^2 2>/dev/null || true)"
    grep -q "^$head" <<<"$at" || fail "head $head is not the checked-out commit (nor a parent of it): check out the pull request's head or merge commit first"
  fi
  args+=(--changes "$base")
}

# also_none summarizes compare: both's second comparison, run <run id>-none
# (the domains benched against base, against no tools), from its directory
# $1 below the first's summary, and sets against-none-label; it fails when
# there is no such report (no second run).
also_none() {
  local dir="$1"
  [ -f "$dir/report.md" ] || return 1
  printf '\n### pairbench: also against no tools (run `%s`)\n\n' "$(basename "$dir")" >>"${GITHUB_STEP_SUMMARY:-/dev/null}"
  cat "$dir/report.md" >>"${GITHUB_STEP_SUMMARY:-/dev/null}"
  set_output against-none-label "$(verdict_of "$dir/report.json")"
}

# total_shards validates total-shards and prints it (0 when not sharded).
total_shards() {
  local n="${PB_TOTAL_SHARDS:-}"
  [ -n "$n" ] || { echo 0; return; }
  want total-shards "$n" '^[1-9][0-9]{0,2}$' "a whole number from 1"
  echo "$n"
}

case "$mode" in
plan)
  n="$(total_shards)"
  [ "$n" -ge 1 ] || fail "mode plan needs total-shards"
  [ -n "$store" ] || fail "a sharded bench needs an artifact store (s3-bucket): it is where the shards meet"
  bench_args
  run_pairbench "${args[@]}" --plan-only
  list="$(seq -s, 1 "$n")"
  set_output shards "[$list]"
  printf '### pairbench: planned run `%s` in %s shards\n' "$run_id" "$n" >>"${GITHUB_STEP_SUMMARY:-/dev/null}"
  if [ -f "$runs_dir/$run_id-none/run.json" ]; then
    # compare: both: the second run, planned beside the first; each shard
    # job runs its shard of both.
    printf '\nand run `%s-none` (compare: both: the domains benched against base, against no tools) in the same shards\n' "$run_id" >>"${GITHUB_STEP_SUMMARY:-/dev/null}"
  fi
  ;;
run)
  n="$(total_shards)"
  bench_args
  if [ "$n" -gt 0 ]; then
    [ -n "$store" ] || fail "a sharded bench needs an artifact store (s3-bucket): it is where the shards meet"
    want shard "${PB_SHARD:-}" '^[1-9][0-9]{0,2}$' "a shard number from 1 to total-shards"
    [ "$PB_SHARD" -le "$n" ] || fail "shard $PB_SHARD is beyond total-shards $n"
    run_pairbench "${args[@]}" --shard "$PB_SHARD/$n"
    printf '### pairbench: shard %s/%s of run `%s` done\n' "$PB_SHARD" "$n" "$run_id" >>"${GITHUB_STEP_SUMMARY:-/dev/null}"
    if [ -f "$runs_dir/$run_id-none/run.json" ]; then
      printf '\nand shard %s/%s of run `%s-none` (against no tools, compare: both)\n' "$PB_SHARD" "$n" "$run_id" >>"${GITHUB_STEP_SUMMARY:-/dev/null}"
    fi
    exit 0
  fi
  run_pairbench "${args[@]}" "${gate_args[@]}" >"$state/run.txt"
  cat "$state/run.txt"
  if grep -q '^pairbench: nothing to bench' "$state/run.txt"; then
    # The pull request touches no domain: no bench, and a summary that says so.
    set_output worst-label ""
    printf '### pairbench: nothing to bench\n\n%s\n' "$(grep '^pairbench: nothing to bench' "$state/run.txt" | head -n 1)" >>"${GITHUB_STEP_SUMMARY:-/dev/null}"
    exit 0
  fi
  summarize "$runs_dir/$run_id"
  upload="$runs_dir/$run_id"
  if also_none "$runs_dir/$run_id-none"; then
    upload="$runs_dir" # both runs
  fi
  if [ -z "$store" ]; then
    set_output artifact-name "pairbench-$run_id"
    set_output artifact-path "$upload"
  fi
  finish
  ;;
merge-and-report)
  [ -n "$store" ] || fail "mode merge-and-report needs the artifact store (s3-bucket) the shards wrote to"
  out="$state/merged/$run_id"
  # With compare: both, merge merges the second run into "$out-none" too.
  rm -rf "$out" "$out-none"
  merge=(merge --store "$store" --run-id "$run_id" --out "$out" --report "${gate_args[@]}")
  site="${PB_SITE_URL:-}"
  if [ -n "$site" ]; then
    want site-url "$site" '^https?://[A-Za-z0-9.:-]+(/[A-Za-z0-9._~/-]*)?$' "an http(s) URL"
    merge+=(--site-url "$site")
  fi
  run_pairbench "${merge[@]}" >"$state/merge.txt"
  cat "$state/merge.txt"
  if [ -n "$site" ]; then
    # The site in the store, served as it is stored: lasts as long as the run.
    # The first run's link comes first (compare: both's second run's after).
    link="$(grep -m 1 -E '^https?://' "$state/merge.txt" || true)"
  else
    # A presigned link would reach report.html alone, for 7 days: link the
    # workflow run instead, whose summary holds the verdict and whose
    # artifact holds the whole site.
    link="${GITHUB_SERVER_URL:-https://github.com}/${GITHUB_REPOSITORY:-}/actions/runs/${GITHUB_RUN_ID:-}"
    set_output artifact-name "pairbench-$run_id-report"
    upload="$out"
    [ ! -d "$out-none" ] || upload="$state/merged" # both runs
    set_output artifact-path "$upload"
  fi
  case "$link" in http://* | https://*) set_output report-url "$link" ;; esac
  summarize "$out"
  also_none "$out-none" || true
  finish
  ;;
report)
  dir="${PB_RUN_DIR:-$runs_dir/$run_id}"
  [ -f "$dir/run.json" ] || fail "run-dir $dir holds no run.json"
  run_pairbench report "$dir" "${gate_args[@]}" >/dev/null
  summarize "$dir"
  if [ -z "$store" ]; then
    set_output artifact-name "pairbench-$run_id-report"
    set_output artifact-path "$dir"
  fi
  finish
  ;;
esac
