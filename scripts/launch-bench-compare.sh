#!/bin/sh
# launch-bench-compare.sh REV [ROUNDS] [ITERATIONS]
#
# Runs the sandbox package's BenchmarkLaunch of REV (the "before") and of
# the working tree (the "after") side by side: ROUNDS rounds (default 6),
# each running ITERATIONS launches (default 10) of one, then of the other,
# alternately, so a busy machine slows both alike. Prints, per metric, the
# median over the rounds for each side and after/before (bench-compare.sh).
set -eu
rev=${1:?usage: launch-bench-compare.sh REV [ROUNDS] [ITERATIONS]}
exec "$(dirname "$0")/bench-compare.sh" "$rev" ./sandbox '^BenchmarkLaunch$' "${2:-6}" "${3:-10}x"
