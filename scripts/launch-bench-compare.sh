#!/bin/sh
# launch-bench-compare.sh REV [ROUNDS] [ITERATIONS]
#
# Runs the sandbox package's BenchmarkLaunch of REV (the "before") and of
# the working tree (the "after") side by side: ROUNDS rounds (default 6),
# each running ITERATIONS launches (default 10) of one, then of the other,
# alternately, so a busy machine slows both alike. Prints, per metric, the
# median over the rounds for each side and after/before.
#
# REV is checked out in a temporary worktree, removed at the end. Each
# test binary runs in its own sandbox/ directory (srt is found through
# ../tools/node_modules there, as the benchmark expects).
set -eu
rev=${1:?usage: launch-bench-compare.sh REV [ROUNDS] [ITERATIONS]}
rounds=${2:-6}
n=${3:-10}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'git -C "$here" worktree remove --force "$tmp/before" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git -C "$here" worktree add --detach "$tmp/before" "$rev" >/dev/null 2>&1
if [ -d "$here/tools/node_modules" ] && [ ! -e "$tmp/before/tools/node_modules" ]; then
	ln -s "$here/tools/node_modules" "$tmp/before/tools/node_modules"
fi
(cd "$tmp/before" && go test -c -o "$tmp/before.test" ./sandbox)
(cd "$here" && go test -c -o "$tmp/after.test" ./sandbox)
run() { # side dir
	(cd "$2/sandbox" && "$tmp/$1.test" -test.run '^$' -test.bench '^BenchmarkLaunch$' \
		-test.benchtime "${n}x" -test.count 1) | grep '^BenchmarkLaunch' | sed "s/^/$1 /"
}
i=0
while [ "$i" -lt "$rounds" ]; do
	run before "$tmp/before" >>"$tmp/results"
	run after "$here" >>"$tmp/results"
	i=$((i + 1))
done
# Each result line: SIDE NAME ITERS NS ns/op VALUE UNIT VALUE UNIT ...
awk -v rounds="$rounds" -v n="$n" '
function median(list,   a, k, m, i, j, t) {
	m = split(list, a, " ")
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
{
	for (k = 6; k < NF; k += 2) {
		v[$1, $(k + 1)] = v[$1, $(k + 1)] " " $k
		if (!seen[$(k + 1)]++) order[++units] = $(k + 1)
	}
}
END {
	printf "BenchmarkLaunch, %d rounds of %d launches each, alternating; medians over the rounds\n", rounds, n
	printf "%-14s %10s %10s %14s\n", "metric", "before", "after", "after/before"
	for (u = 1; u <= units; u++) {
		b = median(v["before", order[u]]); a = median(v["after", order[u]])
		printf "%-14s %10.2f %10.2f %14.2f\n", order[u], b, a, (b ? a / b : 0)
	}
}' "$tmp/results"
