#!/usr/bin/env bash
# Builds pairbench from the Action's own checkout into $PB_BIN, unless the
# cache restored the build of the same sources there.
source "$GITHUB_ACTION_PATH/action/lib.sh"
drop_secrets
: "${PB_BIN:?PB_BIN is not set}"
mkdir -p "$(dirname "$PB_BIN")"
# A build of these very sources restored from the cache (key.sh): no Go needed.
if [ -x "$PB_BIN" ] && [ -x "$(dirname "$PB_BIN")/pairbench-sandbox-init" ] && "$PB_BIN" version >/dev/null 2>&1; then
	echo "pairbench: using the cached build of this Action's sources"
	"$PB_BIN" version
	exit 0
fi
(cd "$GITHUB_ACTION_PATH" && go build -o "$PB_BIN" ./cmd/pairbench) || fail "could not build pairbench from $GITHUB_ACTION_PATH"
# The sandbox's init, beside pairbench, where pairbench looks for it.
(cd "$GITHUB_ACTION_PATH" && CGO_ENABLED=0 go build -o "$(dirname "$PB_BIN")/pairbench-sandbox-init" ./cmd/pairbench-sandbox-init) ||
	fail "could not build pairbench-sandbox-init from $GITHUB_ACTION_PATH"
"$PB_BIN" version
