# Shared by the Action's step scripts; sourced, never run. Every value the
# scripts use arrives in an environment variable (set by action.yml's env:
# blocks or by the runner) and leaves as a quoted argument: nothing is ever
# evaluated as shell code.
set -euo pipefail

# drop_secrets unsets every variable that may hold a credential: the store's
# (AWS_*), model providers' (*_API_KEY, *_TOKEN, *_SECRET*, *_PASSWORD*) and
# GitHub's. A workflow hands secrets to the Action's step as a whole, so the
# steps that need none (installing packages, building, the sandbox check)
# drop them before running anything else.
drop_secrets() {
  local name
  while IFS= read -r name; do
    case "$name" in
    AWS_REGION | AWS_DEFAULT_REGION | GITHUB_*_PATH | GITHUB_ENV | GITHUB_OUTPUT | GITHUB_STEP_SUMMARY | GITHUB_STATE) ;;
    AWS_* | *_API_KEY | *_TOKEN | *_SECRET* | *_PASSWORD* | *_CREDENTIALS*) unset "$name" ;;
    esac
  done < <(compgen -e)
}

# state is where the steps of one job leave notes for each other.
state="${RUNNER_TEMP:?RUNNER_TEMP is not set}/pairbench-action"
mkdir -p "$state"

# fail records the reason for the failure step (its lines kept: the post
# step quotes them), prints it as an error annotation, and exits.
fail() {
  local msg="$*"
  printf '%s\n' "$msg" >"$state/failure.txt"
  printf '::error title=pairbench::%s\n' "$(escape_data "$msg")" >&2
  exit 1
}

# escape_data escapes a workflow command's message as the runner expects.
escape_data() {
  local s="$1"
  s="${s//'%'/%25}"
  s="${s//$'\r'/%0D}"
  s="${s//$'\n'/%0A}"
  printf '%s' "$s"
}

# want NAME VALUE REGEX fails unless VALUE matches REGEX (an ERE).
want() {
  [[ "$2" =~ $3 ]] || fail "input $1 is not valid: want ${4:-a value matching $3}"
}

# set_output NAME VALUE writes a step output; values are single lines.
set_output() {
  case "$2" in *$'\n'* | *$'\r'*) fail "output $1 would span lines" ;; esac
  printf '%s=%s\n' "$1" "$2" >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
}

# quiet_commands runs "$@" with workflow commands in its output disabled:
# pairbench logs carry text from the pull request and the agent, which must
# not be read as commands by the runner. The token is random per call.
quiet_commands() {
  local token rc=0
  token="pairbench-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  printf '::stop-commands::%s\n' "$token"
  "$@" || rc=$?
  printf '::%s::\n' "$token"
  return "$rc"
}

# store_location composes the --store location from the S3 inputs, or
# prints nothing when there is no store.
store_location() {
  [ -n "${PB_S3_BUCKET:-}" ] || return 0
  want s3-bucket "$PB_S3_BUCKET" '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$' "an S3 bucket name"
  want s3-prefix "${PB_S3_PREFIX:-}" '^([A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*)?/?$' "a key prefix such as runs/bench"
  want s3-endpoint "${PB_S3_ENDPOINT:-}" '^(https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?/?)?$' "http(s)://host[:port]"
  want s3-region "${PB_S3_REGION:-}" '^[a-z0-9-]*$' "a region such as us-east-1"
  local loc="s3://$PB_S3_BUCKET" query=""
  local prefix="${PB_S3_PREFIX:-}"
  prefix="${prefix%/}"
  [ -z "$prefix" ] || loc="$loc/$prefix"
  [ -z "${PB_S3_ENDPOINT:-}" ] || query="endpoint=${PB_S3_ENDPOINT%/}&path_style=true"
  [ -z "${PB_S3_REGION:-}" ] || query="${query:+$query&}region=$PB_S3_REGION"
  printf '%s\n' "$loc${query:+?$query}"
}

# verdict_of prints the verdict in a report.json (pairbench writes it
# indented, the run's "verdict" key at the top level).
verdict_of() {
  sed -n 's/^  "verdict": "\([^"]*\)",\{0,1\}$/\1/p' "$1" | head -n 1
}

# summarize appends report.md to the job summary and sets the report
# outputs for the run directory $1.
summarize() {
  local dir="$1"
  [ -f "$dir/report.json" ] || fail "no report was written in $dir"
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    cat "$dir/report.md" >>"$GITHUB_STEP_SUMMARY"
  fi
  set_output report-dir "$dir"
  set_output report-path "$dir/report.html"
  set_output worst-label "$(verdict_of "$dir/report.json")"
}
