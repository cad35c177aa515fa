#!/bin/sh
# The cost model against the testbed: fits the network's latency and rate,
# and the PML's below rail_min_bytes, with loom-tune (ring allgather, the
# ranks dealt to the nodes in turn), then for every collective and size runs the algorithm Loom
# chooses on the testbed's shape and prints its measured time (median of
# interleaved repetitions) beside the model's prediction (loom-plan with
# the fitted model), with the error of every point.
#
#   model-check.sh [-n NP] [-c LIST] [-m MIN:MAX] [-r REPS] [-i ITERS] [-o DIR] [--no-run]
#
# -n ranks (default 2 per node), -c collectives (comma-separated; default
# allreduce,reduce_scatter,allgather,alltoall), -m sizes (default
# 64KiB:16MiB, as loom-bench counts them), -r repetitions (default 3),
# -i timed calls per size (default 4; more where a call is small, so that
# every size's timed calls move at least 4 MiB, after warm-up calls that
# move at least 1 MiB: the testbed's tbf lets 256 KB per rail and
# direction through unshaped after an idle spell, which would otherwise
# time the small sizes above the wire's rate), -o output folder
# (default model-check-out): fit/ (loom-tune's), measured.csv, plan.csv,
# table.csv and summary.txt. --no-run measures nothing: it predicts again
# (after a change to the model) from DIR's fitted model and measurements.
# Ranks are placed consecutively (--map-by ppr:PPN:node), as the model's
# "nodes=N ppn=K" assumes.
# Needs a testbed that is up (testbed.sh up N R RATE), built loom-bench,
# loom-info, loom-plan and loom-tune (LOOM_BUILD: the build folder, default
# build/), and the build outside /tmp (each node has its own /tmp).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${LOOM_BUILD:-$here/../../build}
build=$(cd "$build" && pwd)
run=yes np="" colls="allreduce,reduce_scatter,allgather,alltoall" sizes="64KiB:16MiB" reps=3 iters=4 out=model-check-out
while [ $# -gt 0 ]; do
    case $1 in
        -n) np=$2; shift 2 ;;
        -c) colls=$2; shift 2 ;;
        -m) sizes=$2; shift 2 ;;
        -r) reps=$2; shift 2 ;;
        -i) iters=$2; shift 2 ;;
        -o) out=$2; shift 2 ;;
        --no-run) run=no; shift ;;
        -h | --help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "model-check: unknown argument '$1' (-h for help)" >&2; exit 2 ;;
    esac
done
name=${LOOM_TESTBED_NAME:-loom}
state=/run/$name-testbed
[ -f "$state/nodes" ] || { echo "model-check: no testbed is up (testbed.sh up N R RATE first)" >&2; exit 1; }
nodes=$(cat "$state/nodes")
rails=$(cat "$state/rails")
[ -n "$np" ] || np=$((2 * nodes))
for v in "$np" "$reps" "$iters"; do
    case $v in '' | *[!0-9]* | 0) echo "model-check: -n, -r and -i take positive integers" >&2; exit 2 ;; esac
done
[ $((np % nodes)) -eq 0 ] || { echo "model-check: $np ranks do not fill $nodes nodes evenly" >&2; exit 2; }
ppn=$((np / nodes))
for tool in perf/loom-bench src/loom-info src/loom-plan; do
    [ -x "$build/$tool" ] || { echo "model-check: no $build/$tool (build it, or set LOOM_BUILD)" >&2; exit 2; }
done
# libtool's wrapper names the build folder it was made in; the nodes run
# the program itself.
bench=$build/perf/loom-bench
[ ! -x "$build/perf/.libs/loom-bench" ] || bench=$build/perf/.libs/loom-bench
case $build in /tmp/*) echo "model-check: the build is under /tmp, which every node has its own of; copy it elsewhere" >&2; exit 2 ;; esac
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The rails' rates relative to rail 0, from the testbed's shaping
# ("200mbit", "100mbit", "1gbit").
rate_of() {
    echo "$1" | awk '{ v = $0 + 0; u = tolower($0); sub(/^[0-9.]+/, "", u)
        m = u ~ /^g/ ? 1000 : u ~ /^k/ ? 0.001 : 1; print v * m }'
}
rail_rates="" rail_list=""
k=0
base=$(rate_of "$(cat "$state/rate0")")
while [ $k -lt "$rails" ]; do
    r=$(rate_of "$(cat "$state/rate$k")")
    rail_rates="$rail_rates${rail_rates:+:}$(awk -v r="$r" -v b="$base" 'BEGIN { printf "%g", r / b }')"
    rail_list="$rail_list${rail_list:+,}rail$k"
    k=$((k + 1))
done
# Messages between nodes below the rails' rail_min_bytes (its default, as
# the runs below leave it) go through the PML: the fit gives the model a
# link for them.
rail_min=16384
export LD_LIBRARY_PATH="$build/src/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LOOM_RAILS="$rail_list" LOOM_UCX_TLS=tcp
launcher="sh $here/testbed.sh run -x LD_LIBRARY_PATH -x LOOM_RAILS -x LOOM_UCX_TLS"
if [ $run = yes ]; then
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# 1. The network's parameters: ring allgather steps (rate, latency; below
# rail_min the PML's), the ranks dealt to the nodes in turn so that every
# step crosses the network with each node's ranks sending at once, as in
# the collectives (docs/performance.md); 16 warm-up calls drain the tbf
# buckets at every size.
echo "model-check: fitting the network with loom-tune ($np ranks dealt to the nodes in turn)" >&2
LOOM_BENCH=$bench LOOM_INFO=$build/src/loom-info sh "$here/../loom-tune" \
    -n "$np" --nodes "$nodes" --rails "$rails" --rail-rates "$rail_rates" --real-nodes --spread --api loom \
    --rail-min "$rail_min" -c allgather -a ring -m 4096:2097152 -r 2 -b "-i 8 -x 16" -o "$out/fit" \
    --mpirun "$launcher --map-by node" >"$out/fit.log" 2>&1 || { tail -20 "$out/fit.log" >&2; exit 1; }
fi
# --no-run: loom-tune fits again from its raw results, so that a change to
# the fit shows.
[ $run = yes ] || LOOM_INFO=$build/src/loom-info sh "$here/../loom-tune" --no-run -n "$np" --nodes "$nodes" \
    --rails "$rails" --rail-rates "$rail_rates" --rail-min "$rail_min" --real-nodes --spread --api loom -c allgather -a ring -r 2 \
    -o "$out/fit" >"$out/fit.log" 2>&1 || { tail -20 "$out/fit.log" >&2; exit 1; }
model=$(sed -n 's/^  "model": "\(.*\)",$/\1/p' "$out/fit/rules.json")
[ -n "$model" ] || { echo "model-check: loom-tune fitted no model (see $out/fit.log)" >&2; exit 1; }
echo "model-check: fitted $model" >&2

# 2. What Loom chooses at every point, and the model's time for it.
shape="nodes=$nodes ppn=$ppn rails=$rails type=int8"
"$build/src/loom-plan" "$shape" -c "$colls" -m "$sizes" --cost-model "$model" -f csv >"$out/plan.csv"
awk -F, 'NR > 1 && $5 == 1 { print $1, $2, $4, $6 }' "$out/plan.csv" >"$out/chosen.txt"
[ -s "$out/chosen.txt" ] || { echo "model-check: loom-plan chose nothing (see $out/plan.csv)" >&2; exit 1; }

# 3. Measured: each (collective, size) with the algorithm chosen there,
# forced so that the run is the plan predicted; repetitions interleaved.
if [ $run = yes ]; then
echo "collective,bytes,algorithm,rep,measured_us" >"$out/measured.csv"
rep=1
while [ $rep -le "$reps" ]; do
    while read -r coll bytes alg _; do
        var=LOOM_$(echo "$coll" | tr 'a-z' 'A-Z')_ALGORITHM
        n=$(((4194304 + bytes - 1) / bytes))
        [ "$n" -ge "$iters" ] || n=$iters
        warm=$(((1048576 + bytes - 1) / bytes))
        echo "model-check: rep $rep/$reps $coll $bytes $alg ($warm + $n calls)" >&2
        raw="$out/raw.$coll.$bytes.$rep.txt"
        # shellcheck disable=SC2086
        if ! $launcher --map-by "ppr:$ppn:node" -np "$np" -x "$var=$alg" "$bench" "$coll" --api loom -m "$bytes:$bytes" \
            -i "$n" -x "$warm" </dev/null >"$raw" 2>&1; then
            echo "model-check: $coll $bytes $alg failed (see $raw)" >&2
            continue
        fi
        awk -v c="$coll" -v a="$alg" -v r="$rep" -v b="$bytes" '$1 == b && /^[0-9]+ +[0-9.]+$/ { print c "," b "," a "," r "," $2 }' \
            "$raw" >>"$out/measured.csv"
    done <"$out/chosen.txt"
    rep=$((rep + 1))
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "$load_before -> $load_after" >"$out/load.txt"
fi

# 4. The table: median of the repetitions against the prediction.
awk -F, -v reps="$reps" '
    NR == FNR { split($0, f, " "); pred[f[1] "," f[2]] = f[4]; alg[f[1] "," f[2]] = f[3]; key[++n] = f[1] "," f[2]; next }
    FNR > 1 { k = $1 "," $2; if ($3 == alg[k]) { m[k] = m[k] " " $5; cnt[k]++ } }
    END {
        print "collective,bytes,algorithm,predicted_us,measured_us,repetitions,error_pct"
        for (i = 1; i <= n; ++i) {
            k = key[i]
            if (!cnt[k]) { print k "," alg[k] "," pred[k] ",,0,"; continue }
            c = split(substr(m[k], 2), v, " ")
            for (a = 2; a <= c; ++a) { x = v[a]; for (b = a - 1; b >= 1 && v[b] + 0 > x + 0; --b) v[b + 1] = v[b]; v[b + 1] = x }
            med = c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
            printf "%s,%s,%.1f,%.1f,%d,%+.1f\n", k, alg[k], pred[k], med, c, 100 * (pred[k] - med) / med
        }
    }' "$out/chosen.txt" "$out/measured.csv" >"$out/table.csv"

{
    echo "model-check: $nodes nodes x $ppn ranks, $rails rails ($(cat "$state/rate")), rail rates $rail_rates"
    echo "fitted model: $model"
    echo "load: $(cat "$out/load.txt"); $reps repetitions, medians"
    echo
    printf "%-15s %10s  %-20s %14s %14s %8s\n" collective bytes algorithm "predicted us" "measured us" error
    awk -F, 'NR > 1 { printf "%-15s %10s  %-20s %14s %14s %7s%%\n", $1, $2, $3, $4, $5, $7 }' "$out/table.csv"
    awk -F, 'NR > 1 && $7 != "" { n++; e = $7 < 0 ? -$7 : $7; if (e <= 15) in15++; if (e <= 30) in30++; if (e > worst) worst = e }
        NR > 1 && $7 == "" { missing++ }
        END { printf "\n%d points: %d within 15 %% (%.0f %%), %d within 30 %%, largest error %.1f %%%s\n", n, in15, n ? 100 * in15 / n : 0, in30, worst,
              missing ? sprintf("; %d not measured", missing) : "" }' "$out/table.csv"
} | tee "$out/summary.txt"
