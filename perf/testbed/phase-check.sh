#!/bin/sh
# The cost model's phases against traced calls on the testbed: for each
# COLLECTIVE:BYTES (default allreduce:64KiB allreduce:16MiB
# reduce_scatter:1MiB) it forces the algorithm Loom chooses there, runs it
# traced (LOOM_TRACE) through libloom on Loom's rails, and prints, per phase
# (sub-collective) of the call, when its last step ended: the median over
# the timed calls (loom-trace's summaries) beside loom-plan --phases with
# model-check's fitted model.
#
#   phase-check.sh -f DIR [-i ITERS] [-o OUT] [COLLECTIVE:BYTES ...]
#
# -f a model-check.sh output folder (its fit/rules.json holds the model),
# -i timed calls (default 4; warm-up calls move at least 1 MiB first),
# -o output folder (default phase-check-out: the traces and summaries).
# Needs a testbed that is up, and LOOM_BUILD as model-check.sh does.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${LOOM_BUILD:-$here/../../build}
build=$(cd "$build" && pwd)
fit="" iters=4 out=phase-check-out
while [ $# -gt 0 ]; do
    case $1 in
        -f) fit=$2; shift 2 ;;
        -i) iters=$2; shift 2 ;;
        -o) out=$2; shift 2 ;;
        -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "phase-check: unknown argument '$1' (-h for help)" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || set -- allreduce:65536 allreduce:16777216 reduce_scatter:1048576
case $iters in '' | *[!0-9]* | 0) echo "phase-check: -i takes a positive integer" >&2; exit 2 ;; esac
[ -n "$fit" ] && [ -f "$fit/fit/rules.json" ] || { echo "phase-check: -f needs a model-check.sh output folder" >&2; exit 2; }
model=$(sed -n 's/^  "model": "\(.*\)",$/\1/p' "$fit/fit/rules.json")
[ -n "$model" ] || { echo "phase-check: no model in $fit/fit/rules.json" >&2; exit 1; }
state=/run/${LOOM_TESTBED_NAME:-loom}-testbed
[ -f "$state/nodes" ] || { echo "phase-check: no testbed is up" >&2; exit 1; }
case $build in /tmp/*) echo "phase-check: the build is under /tmp, which every node has its own of" >&2; exit 2 ;; esac
nodes=$(cat "$state/nodes") rails=$(cat "$state/rails")
np=$((2 * nodes))
rail_list=$(awk -v n="$rails" 'BEGIN { for (k = 0; k < n; ++k) printf "%srail%d", k ? "," : "", k }')
bench=$build/perf/loom-bench
[ ! -x "$build/perf/.libs/loom-bench" ] || bench=$build/perf/.libs/loom-bench
mkdir -p "$out"
out=$(cd "$out" && pwd)
export LD_LIBRARY_PATH="$build/src/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LOOM_RAILS="$rail_list" LOOM_UCX_TLS=tcp
# The phases of a summary: "PHASE|END_MS" per line, a "call" line before each call's.
phases_of() {
    sed -n -e 's/^comm [0-9]* call [0-9]*: .*: \([0-9.]*\) ms (ranks.*/call|\1/p' \
        -e 's/^    \(.*[^ ]\)  *[+-][0-9.]* ms \.\.  *+\([0-9.]*\) ms .*/\1|\2/p' "$1"
}
echo "phase-check: model $model; load $(cut -d' ' -f1-3 /proc/loadavg)"
for spec; do
    coll=${spec%%:*} bytes=${spec#*:}
    "$build/src/loom-plan" "nodes=$nodes ppn=2 rails=$rails type=int8" -c "$coll" -m "$bytes:$bytes" \
        --cost-model "$model" -f csv >"$out/$coll.$bytes.plan.csv"
    alg=$(awk -F, 'NR > 1 && $5 == 1 { print $4 }' "$out/$coll.$bytes.plan.csv")
    [ -n "$alg" ] || { echo "phase-check: loom-plan chose nothing for $coll $bytes" >&2; exit 1; }
    "$build/src/loom-plan" "nodes=$nodes ppn=2 rails=$rails type=int8" -c "$coll" -m "$bytes:$bytes" \
        --cost-model "$model" --phases >"$out/$coll.$bytes.plan.txt"
    dir=$out/$coll.$bytes.traces
    rm -rf "$dir" && mkdir -p "$dir"
    warm=$(((1048576 + bytes - 1) / bytes))
    var=LOOM_$(echo "$coll" | tr 'a-z' 'A-Z')_ALGORITHM
    sh "$here/testbed.sh" run -x LD_LIBRARY_PATH -x LOOM_RAILS -x LOOM_UCX_TLS -x "$var=$alg" \
        -x "LOOM_TRACE=$dir/loom-%r.json" --map-by ppr:2:node -np "$np" "$bench" "$coll" --api loom \
        -m "$bytes:$bytes" -i "$iters" -x "$warm" </dev/null >"$out/$coll.$bytes.bench.txt" 2>&1 ||
        { echo "phase-check: $coll $bytes $alg failed (see $out/$coll.$bytes.bench.txt)" >&2; exit 1; }
    "$build/src/loom-trace" "$dir"/loom-*.json >"$out/$coll.$bytes.trace.txt"
    echo
    echo "$coll $bytes ($alg): when each phase's last step ended, ms from the call's start"
    printf '  %-52s %12s %12s %8s\n' phase predicted measured error
    # The timed calls are the last ITERS (the rails' set-up calls come
    # first); medians of each phase's end, of the phases those calls have.
    phases_of "$out/$coll.$bytes.trace.txt" | awk -F'|' -v n="$iters" '
        $1 == "call" { ++calls; total[calls] = $2; next }
        { end[calls, $1] = $2; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
        function median(list,    m, v, i, j, t) {
            m = split(list, v, " ")
            for (i = 1; i <= m; ++i) for (j = i + 1; j <= m; ++j) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
            return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
        }
        END {
            for (i = 1; i <= k; ++i) {
                list = ""
                for (c = calls - n + 1; c <= calls; ++c) if ((c, order[i]) in end) list = list " " end[c, order[i]]
                if (list != "") print order[i] "|" median(list)
            }
            list = ""
            for (c = calls - n + 1; c <= calls; ++c) list = list " " total[c]
            print "(the call)|" median(list)
        }' >"$out/$coll.$bytes.measured.txt"
    phases_of "$out/$coll.$bytes.plan.txt" >"$out/$coll.$bytes.predicted.txt"
    awk -F, 'NR > 1 && $5 == 1 { print "(the call)|" $6 / 1000 }' "$out/$coll.$bytes.plan.csv" \
        >>"$out/$coll.$bytes.predicted.txt"
    awk -F'|' 'FILENAME == ARGV[1] { p[$1] = $2; next }
        { e = ($1 in p) && $2 > 0 ? sprintf("%+.1f%%", 100 * (p[$1] - $2) / $2) : "-"
          printf "  %-52s %12s %12.3f %8s\n", $1, ($1 in p) ? sprintf("%.3f", p[$1]) : "-", $2, e }' \
        "$out/$coll.$bytes.predicted.txt" "$out/$coll.$bytes.measured.txt"
done
