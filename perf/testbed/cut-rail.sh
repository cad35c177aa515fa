#!/bin/sh
# A rail cut mid-run on the testbed (which must be up): test_rail_failover
# runs ITERATIONS validated allreduces of COUNT doubles through coll/loom
# over the rails; after iteration DOWN_AFTER this script takes rail RAIL of
# node NODE down (both ends), after UP_AFTER it brings it back. Prints every
# iteration's time, Loom's rail events and coll/loom's stats; exits with the
# test's status.
#
#   perf/testbed/cut-rail.sh NP ITERATIONS COUNT DOWN_AFTER UP_AFTER NODE RAIL [mpirun args...]
#
# The PML must not ride the rail that is cut: it goes on the management
# network unless the arguments name btl_tcp_if_include. LOOM_BUILD names the
# build tree (default: build/); CUT_RAIL_PLOT=FILE.png plots the iteration
# times (gnuplot).
set -u
[ $# -ge 7 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
np=$1 iterations=$2 count=$3 down_after=$4 up_after=$5 node=$6 rail=$7
shift 7
here=$(cd "$(dirname "$0")" && pwd)
build=${LOOM_BUILD:-$here/../../build}
testbed="$here/testbed.sh"
program="$build/tests/mpi/test_rail_failover"
[ -x "$program" ] || { echo "cut-rail: $program is not built (make -C $build tests/mpi/test_rail_failover)" >&2; exit 2; }
ompi_dir=$(pkg-config --variable=libdir ompi-c 2>/dev/null)/openmpi3
[ -d "$ompi_dir" ] || ompi_dir=$(pkg-config --variable=libdir ompi-c 2>/dev/null)/openmpi
case "$*" in *btl_tcp_if_include*) pml_net="" ;; *) pml_net="--mca btl_tcp_if_include 10.77.0.0/24" ;; esac
case "$*" in *coll_loom_ucx_tls*) tls="" ;; *) tls="--mca coll_loom_ucx_tls tcp" ;; esac
# Outside /tmp: every emulated node has a /tmp of its own.
signals=$(mktemp -d /var/tmp/loom-cut-rail.XXXXXX)
trap 'rm -rf "$signals"' EXIT INT TERM
: >"$signals/out"  # before tail opens it: the job's redirection may come later
# shellcheck disable=SC2086
sh "$testbed" run -np "$np" --map-by node $pml_net \
    --mca mca_base_component_path "$build/coll/component-path:$ompi_dir" \
    --mca coll_loom_priority 100 --mca coll_loom_stats 1 $tls "$@" \
    "$program" "$iterations" "$count" "$down_after" "$up_after" "$signals" >"$signals/out" 2>&1 &
job=$!
tail -f "$signals/out" --pid "$job" &
for step in down up; do
    while [ ! -e "$signals/$step" ] && kill -0 "$job" 2>/dev/null; do sleep 0.02; done
    [ -e "$signals/$step" ] || break
    sh "$testbed" "rail-$step" "$node" "$rail"
    touch "$signals/$step.done"
done
wait "$job"
rc=$?
sleep 0.2  # tail's last lines
if [ -n "${CUT_RAIL_PLOT:-}" ] && command -v gnuplot >/dev/null 2>&1; then
    sed -n 's/^iteration \([0-9]*\): \([0-9.]*\) s.*/\1 \2/p' "$signals/out" >"$signals/times"
    gnuplot <<EOF
set terminal pngcairo size 800,450
set output "$CUT_RAIL_PLOT"
set title "allreduce of $count doubles on $np ranks; rail $rail of node $node down after $down_after, up after $up_after"
set xlabel "iteration"
set ylabel "seconds"
set yrange [0:*]
set arrow from $down_after.5, graph 0 to $down_after.5, graph 1 nohead dt 2
set arrow from $up_after.5, graph 0 to $up_after.5, graph 1 nohead dt 2
plot "$signals/times" using 1:2 with linespoints title "time per call"
EOF
    echo "plot: $CUT_RAIL_PLOT"
fi
exit $rc
