#!/bin/sh
# cold-start-phases.sh [STARTS]
#
# Where a confined cold browser start spends its time, phase by phase.
# Runs browser/local's BenchmarkSetup (STARTS starts, default 12) of
# the working tree under `perf trace` (Debian package linux-perf; root),
# recording only process events, and prints per phase the median over the
# starts, in milliseconds:
#
#   bwrap->init       bubblewrap's exec until the sandbox's init (PID 1) execs
#   init->chromium    the init's exec until Chromium's browser process execs
#   chromium->zygote  the browser's exec until it launches its sandboxed zygote
#   zygote boot       that launch until the zygote is up (its unshare of a
#                     user namespace, just before it reports ZYGOTE_OK)
#   browser blocked   that launch until the browser's main thread starts
#                     another thread: the browser waits for the zygote
#
# perf trace adds a little to every traced event, so the phases are for
# comparing with each other and across changes, not for benchmark figures
# (scripts/bench-compare.sh gives those).
set -eu
starts=${1:-12}
here=$(cd "$(dirname "$0")/.." && pwd)
command -v perf >/dev/null || { echo "cold-start-phases.sh: needs perf (apt-get install linux-perf)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
(cd "$here" && go test -c -o "$tmp/local.test" ./browser/local)
(cd "$here/browser/local" && perf trace -f --no-syscalls -e execve,clone,clone3,unshare -o "$tmp/trace" \
	"$tmp/local.test" -test.run '^$' -test.bench '^BenchmarkSetup$' -test.benchtime "${starts}x" -test.count 1 >/dev/null)
# Lines read: "  TIME ( DUR ms): COMM/PID SYSCALL(ARGS) = RET".
awk '
function pid(f,   a) { split(f, a, "/"); return a[2] }
function median(list,   a, m, i, j, t) {
	m = split(list, a, " ")
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
function flush() {
	if (zready && resume) {
		n++
		ph["bwrap->init"] = ph["bwrap->init"] " " (init - bw)
		ph["init->chromium"] = ph["init->chromium"] " " (chr - init)
		ph["chromium->zygote"] = ph["chromium->zygote"] " " (zlaunch - chr)
		ph["zygote boot"] = ph["zygote boot"] " " (zready - zlaunch)
		ph["browser blocked"] = ph["browser blocked"] " " (resume - zlaunch)
	}
	bw = init = chr = zlaunch = zready = resume = 0; browser = ""; nz = 0; delete zpid
}
$0 !~ /\): / { next }
{
	t = $1 + 0
	for (i = 2; i <= NF; i++) if ($i ~ /\):$/) break
	who = $(i + 1); call = $(i + 2); p = pid(who)
}
call ~ /^execve\(/ && who ~ /^bwrap\// { flush(); bw = t; bwpid = p; next }
!bw { next }
call ~ /^execve\(/ && !init && p != bwpid { init = t; next }
call ~ /^execve\(/ && who ~ /^chromium\// {
	if (!chr) { chr = t; browser = p } else if (nz < 2) { zpid[p] = 1; nz++ }
	next
}
call ~ /^clone\(/ && p == browser && /NEWPID\|NEWNET/ && !zlaunch { zlaunch = t; next }
call ~ /^unshare\(/ && (p in zpid) && zlaunch && !zready { zready = t; next }
call ~ /^clone3\(/ && p == browser && zready && !resume { resume = t; next }
END {
	flush()
	printf "%d confined cold starts (perf trace); medians in ms\n", n
	k = split("bwrap->init|init->chromium|chromium->zygote|zygote boot|browser blocked", order, "|")
	for (i = 1; i <= k; i++) printf "%-18s %8.1f\n", order[i], median(ph[order[i]])
}' "$tmp/trace"
