#!/usr/bin/env bash
# Installs what the runner lacks for a bench (bubblewrap, Chromium, the
# pinned Node, pi and Playwright MCP tools) with the project's own
# scripts/setup.sh, leaving out what only pairbench's tests need.
source "$GITHUB_ACTION_PATH/action/lib.sh"
drop_secrets
PAIRBENCH_SETUP_TEST_TOOLS=0 bash "$GITHUB_ACTION_PATH/scripts/setup.sh" ||
  fail "the runner lacks tools pairbench needs and could not install them; see docs/runners.md"
