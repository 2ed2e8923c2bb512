#!/usr/bin/env bash
# Names the pairbench build of the Action's own sources, for the cache of
# built binaries: the same sources (Go files, go.mod, go.sum) on the same
# kind of runner give the same key, so a job after the first restores the
# binaries instead of building them (minutes on a cold runner).
source "$GITHUB_ACTION_PATH/action/lib.sh"
drop_secrets
sum="$(cd "$GITHUB_ACTION_PATH" && find . -path ./tools -prune -o \( -name '*.go' -o -name go.mod -o -name go.sum \) -type f -print |
	LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-32)"
set_output key "pairbench-bin-$(uname -s)-$(uname -m)-$sum"
