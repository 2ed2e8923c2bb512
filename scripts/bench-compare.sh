#!/bin/sh
# bench-compare.sh REV PKG BENCH [ROUNDS] [BENCHTIME]
#
# Runs the Go benchmarks matching BENCH in package PKG (./runner,
# ./browser/local, ...) at revision REV (the "before") and in the
# working tree (the "after") side by side in one run: ROUNDS rounds
# (default 3), each running BENCHTIME (default 4x) of the before, then of
# the after, so a busy machine weighs on both alike. Prints, per benchmark
# and metric, the median over the rounds of each side and after/before.
#
# REV is exported with git archive into a temporary directory (removed at
# the end); both sides use this tree's tools/node_modules. Each test binary
# runs in its own package directory, as go test would run it.
#
#   scripts/bench-compare.sh 7a24cd8 ./runner '^BenchmarkTrialOverhead$/spare' 3 4x
#   scripts/bench-compare.sh 7a24cd8 ./browser/local '^BenchmarkSetup$' 3 6x
set -eu
rev=${1:?usage: bench-compare.sh REV PKG BENCH [ROUNDS] [BENCHTIME]}
pkg=${2:?usage: bench-compare.sh REV PKG BENCH [ROUNDS] [BENCHTIME]}
bench=${3:?usage: bench-compare.sh REV PKG BENCH [ROUNDS] [BENCHTIME]}
rounds=${4:-3}
benchtime=${5:-4x}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A root launcher's sandboxes run as users of their own: they must reach
# the before tree's tools through this directory.
chmod 755 "$tmp"
mkdir "$tmp/before"
git -C "$here" archive "$rev" | tar -x -C "$tmp/before"
if [ -d "$here/tools/node_modules" ]; then
	ln -s "$here/tools/node_modules" "$tmp/before/tools/node_modules"
fi
(cd "$tmp/before" && go test -c -o "$tmp/before.test" "$pkg")
(cd "$here" && go test -c -o "$tmp/after.test" "$pkg")
run() { # side tree
	(cd "$2/$pkg" && "$tmp/$1.test" -test.run '^$' -test.bench "$bench" \
		-test.benchtime "$benchtime" -test.count 1 2>/dev/null) | grep '^Benchmark' | sed "s/^/$1 /"
}
i=0
while [ "$i" -lt "$rounds" ]; do
	run before "$tmp/before" >>"$tmp/results"
	run after "$here" >>"$tmp/results"
	i=$((i + 1))
done
cat "$tmp/results" >&2
# Each line: SIDE NAME ITERS NS ns/op VALUE UNIT VALUE UNIT ...
awk -v rounds="$rounds" -v bt="$benchtime" -v rev="$rev" '
function median(list,   a, m, i, j, t) {
	m = split(list, a, " ")
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
{
	for (k = 4; k < NF; k += 2) {
		key = $2 " " $(k + 1)
		v[$1, key] = v[$1, key] " " $k
		if (!seen[key]++) order[++n] = key
	}
}
END {
	printf "%d rounds of %s each, before (%s) and after alternating; medians over the rounds\n", rounds, bt, rev
	printf "%-44s %12s %12s %13s\n", "benchmark metric", "before", "after", "after/before"
	for (i = 1; i <= n; i++) {
		b = median(v["before", order[i]]); a = median(v["after", order[i]])
		printf "%-44s %12.3f %12.3f %13.2f\n", order[i], b, a, (b ? a / b : 0)
	}
}' "$tmp/results"
