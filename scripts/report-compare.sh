#!/usr/bin/env bash
# report-compare.sh REV [INTENTS] [PAIRS] [ROUNDS]
#
# Times `pairbench report` at revision REV (the "before") and in the working
# tree (the "after") side by side in one run, on the same synthetic run of
# INTENTS intents (default 300) of PAIRS pairs (default 24) written by this
# tree's examples/runs/gen -big, without trial directories: ROUNDS rounds
# (default 9), each reporting once with the before, then with the after, into
# a fresh directory, so a busy machine weighs on both alike. Prints, per side,
# the median over the rounds of the wall time and of the CPU time (user and
# system, every thread), and after/before.
#
#   scripts/report-compare.sh a85505f            # before the report site
#   scripts/report-compare.sh a85505f 300 24 15
set -eu
rev=${1:?usage: report-compare.sh REV [INTENTS] [PAIRS] [ROUNDS]}
intents=${2:-300}
pairs=${3:-24}
rounds=${4:-9}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/before"
git -C "$here" archive "$rev" | tar -x -C "$tmp/before"
(cd "$tmp/before" && go build -o "$tmp/before.bin" ./cmd/pairbench)
(cd "$here" && go build -o "$tmp/after.bin" ./cmd/pairbench)
(cd "$here" && go run ./examples/runs/gen -big "$intents" -pairs "$pairs" -out "$tmp/run")
TIMEFORMAT='%R %U %S' # bash's time: wall, user and system seconds
i=0
while [ "$i" -lt "$rounds" ]; do
	for side in before after; do
		rm -rf "$tmp/out"
		printf '%s ' "$side" >>"$tmp/times"
		{ time "$tmp/$side.bin" report "$tmp/run" --out "$tmp/out" >/dev/null 2>"$tmp/stderr" ||
			{ cat "$tmp/stderr" >&2; exit 1; }; } 2>>"$tmp/times"
	done
	i=$((i + 1))
done
cat "$tmp/times" >&2
awk -v rounds="$rounds" -v rev="$rev" -v intents="$intents" -v pairs="$pairs" '
function median(list,   a, m, i, j, t) {
	m = split(list, a, " ")
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
{ wall[$1] = wall[$1] " " $2; cpu[$1] = cpu[$1] " " ($3 + $4) }
END {
	printf "pairbench report of %d intents x %d pairs, %d rounds, before (%s) and after alternating; medians\n", intents, pairs, rounds, rev
	printf "%-10s %10s %10s %13s\n", "metric", "before", "after", "after/before"
	b = median(wall["before"]); a = median(wall["after"]); printf "%-10s %9.2fs %9.2fs %13.2f\n", "wall", b, a, a / b
	b = median(cpu["before"]); a = median(cpu["after"]); printf "%-10s %9.2fs %9.2fs %13.2f\n", "cpu", b, a, a / b
}' "$tmp/times"
