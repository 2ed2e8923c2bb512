#!/usr/bin/env bash
# Builds pairbench from the Action's own checkout into $PB_BIN.
source "$GITHUB_ACTION_PATH/action/lib.sh"
drop_secrets
: "${PB_BIN:?PB_BIN is not set}"
mkdir -p "$(dirname "$PB_BIN")"
(cd "$GITHUB_ACTION_PATH" && go build -o "$PB_BIN" ./cmd/pairbench) || fail "could not build pairbench from $GITHUB_ACTION_PATH"
"$PB_BIN" version
