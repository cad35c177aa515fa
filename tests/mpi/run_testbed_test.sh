#!/bin/sh
# Cluster in a box, end to end: brings up 2 emulated nodes with 2 shaped
# rails, runs a validated Loom collective across them through coll/loom
# (2 ranks per node: shared memory within a node; across nodes Loom's UCX
# rails when built with UCX, else the PML), checks that Loom saw 2 nodes and
# that both rails carried bytes, survives a rail cut mid-run (with UCX),
# and tears the testbed down, also on failure. Skips (77) with the reason where network namespaces are not
# permitted.
set -u
build=${top_builddir:-.}
testbed="$(cd "$(dirname "$0")/../../perf/testbed" && pwd)/testbed.sh"
export LOOM_TESTBED_NAME=loomtest LOOM_BUILD="$(cd "$build" && pwd)"
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: the testbed needs root (network namespaces)"
    exit 77
fi
if ! ip netns add loomtest-probe 2>/dev/null; then
    echo "SKIP: network namespaces are not permitted here (ip netns add failed)"
    exit 77
fi
ip netns delete loomtest-probe
so="$build/coll/.libs/mca_coll_loom.so"
[ -f "$so" ] || { echo "SKIP: coll/loom was not built"; exit 77; }
trap 'sh "$testbed" down >/dev/null 2>&1' EXIT INT TERM
sh "$testbed" up 2 2 200mbit || { echo "FAIL: testbed up"; exit 1; }
rails_args=""
if "$LOOM_BUILD/src/loom-info" --version | grep -q "built with:.* ucx"; then
    rails_args="--mca coll_loom_rails rail0,rail1 --mca coll_loom_ucx_tls tcp"
fi
ompi_dir=$(pkg-config --variable=libdir ompi-c 2>/dev/null)/openmpi3
[ -d "$ompi_dir" ] || ompi_dir=$(pkg-config --variable=libdir ompi-c 2>/dev/null)/openmpi
out=$(timeout 120 sh "$testbed" run -np 4 --map-by node \
    --mca mca_base_component_path "$LOOM_BUILD/coll/component-path:$ompi_dir" \
    --mca coll_loom_priority 100 --mca coll_loom_stats 1 $rails_args \
    "$LOOM_BUILD/perf/loom-bench" allreduce -m 8:1048576 -i 5 -x 1 -c 2>&1)
rc=$?
echo "$out" | tail -26
status=0
[ $rc -eq 0 ] || { echo "FAIL: loom-bench across the testbed exited $rc"; status=1; }
[ "$(echo "$out" | grep -c Pass)" -eq 18 ] || { echo "FAIL: not every size validated"; status=1; }
if [ -n "$rails_args" ]; then
    echo "$out" | grep -q "MPI_COMM_WORLD rails: 2 rails over UCX: rail0 .* rail1 " ||
        { echo "FAIL: the rails did not come up"; status=1; }
    for r in 0 1; do
        echo "$out" | grep -Eq "rail${r}_sent_bytes=[1-9][0-9]* .*rail${r}_received_bytes=[1-9]" ||
            { echo "FAIL: rail$r carried no bytes"; status=1; }
    done
fi
echo "$out" | grep -q "allreduce  *[1-9][0-9]* .* 0 " ||
    { echo "FAIL: coll/loom did not handle the allreduces"; status=1; }
echo "$out" | grep -q "shared_memory among 2 ranks" ||
    { echo "FAIL: Loom did not group the ranks by emulated node"; status=1; }
# The step timeline: every rank's file holds every step of every call's
# plan, loom-trace merges them, and the bytes it saw on each rail are the
# allreduces' bytes coll_loom_stats counted. A trace file that cannot be
# written is reported and the job runs untraced.
trace_dir=$(mktemp -d "$LOOM_BUILD/trace.XXXXXX")  # not /tmp: every node has its own
traced=$(timeout 120 sh "$testbed" run -np 4 --map-by node \
    --mca mca_base_component_path "$LOOM_BUILD/coll/component-path:$ompi_dir" \
    --mca coll_loom_priority 100 --mca coll_loom_stats 1 $rails_args --mca coll_loom_trace "$trace_dir/loom-%r.json" \
    "$LOOM_BUILD/perf/loom-bench" allreduce -m 1048576:1048576 -i 3 -x 1 -c 2>&1)
checked=$("$LOOM_BUILD/src/loom-trace" -q --check -o "$trace_dir/merged.json" "$trace_dir"/loom-[0-3].json 2>&1)
rc=$?
remerged=$("$LOOM_BUILD/src/loom-trace" -q --check "$trace_dir/merged.json" 2>&1)
trace_ok=1
echo "$traced" | grep -q Pass || trace_ok=0
[ $rc -eq 0 ] && echo "$checked" | grep -Eq "check: [1-9][0-9]* calls in 4 files, 0 with steps missing" || trace_ok=0
[ "$(echo "$checked" | grep "carried")" = "$(echo "$remerged" | grep "carried")" ] || trace_ok=0
if [ -n "$rails_args" ]; then
    for r in 0 1; do
        # coll_loom_stats reports rank 0's counts.
        counted=$(echo "$traced" | grep -o "allreduce_rail${r}_sent_bytes=[0-9]*" | head -1 | cut -d= -f2)
        seen=$(echo "$checked" | awk -v r="ucx rail$r" '$0 == "check: rank 0 sent " $5 " bytes through " r {print $5}')
        [ "$counted" -gt 0 ] && [ "$counted" = "$seen" ] || { trace_ok=0; echo "rail$r: stats $counted bytes, trace ${seen:-none}"; }
    done
fi
untraced=$(timeout 120 sh "$testbed" run -np 4 --map-by node \
    --mca mca_base_component_path "$LOOM_BUILD/coll/component-path:$ompi_dir" \
    --mca coll_loom_priority 100 --mca coll_loom_trace /nonexistent-dir/loom-%r.json \
    "$LOOM_BUILD/perf/loom-bench" allreduce -m 65536:65536 -i 2 -x 1 -c 2>&1)
echo "$untraced" | grep -q "loom: trace: cannot write the trace file '/nonexistent-dir/loom-0.json': No such file or directory; the job runs untraced" &&
    echo "$untraced" | grep -q Pass || { trace_ok=0; echo "$untraced" | tail -5; }
if [ $trace_ok -eq 1 ]; then
    echo "PASS: the step timeline across the testbed: every step on every rank, merged, bytes per rail as counted"
else
    echo "FAIL: the step timeline across the testbed"
    echo "$checked" | tail -8
    echo "$traced" | tail -5
    status=1
fi
rm -rf "$trace_dir"
# A program that makes only nonblocking calls gets the rails at its first
# one (before, they came up at the first blocking collective), and the
# progress thread drives them with failover on (the default): every call of
# the four collectives is the thread's while the ranks compute without
# calling MPI, and every collective's bytes cross both rails.
if [ -n "$rails_args" ]; then
    nb=$(timeout 120 sh "$testbed" run -np 4 --map-by node \
        --mca mca_base_component_path "$LOOM_BUILD/coll/component-path:$ompi_dir" \
        --mca coll_loom_priority 100 --mca coll_loom_stats 1 $rails_args --mca coll_loom_progress_thread on \
        "$LOOM_BUILD/tests/mpi/test_nonblocking_only" 4 262144 all 20 2>&1)
    carried=$(echo "$nb" | grep -o "allreduce_rail0_sent_bytes=[0-9]*" | head -1 | cut -d= -f2)
    both=1
    for c in allreduce reduce_scatter_block allgather alltoall; do
        echo "$nb" | grep -q "${c}_rail0_sent_bytes=[1-9].*${c}_rail1_sent_bytes=[1-9]" || both=0
    done
    if [ "$(echo "$nb" | grep -c "calls of 262144 ints, 0 wrong elements")" -eq 4 ] && [ "${carried:-0}" -ge 262144 ] &&
        [ $both -eq 1 ] && echo "$nb" | grep -q "failover through the pml" &&
        echo "$nb" | grep -q "progress thread: on: 16 calls driven by the thread, 0 by the caller"; then
        echo "PASS: nonblocking calls alone bring the rails up, and the progress thread drives them with failover on (16 calls, all four collectives on both rails)"
    else
        echo "FAIL: nonblocking calls alone: the rails or the progress thread on them (rail0: ${carried:-no} bytes)"
        echo "$nb" | grep -v "^  [a-z_]* *[0-9]" | tail -12
        status=1
    fi
fi
# The node-aware algorithms forced, every collective's results checked by
# test_component, across the nodes (over the rails when built with UCX).
for forced in "hier_split hierarchical hierarchical node_aggregation" "hier_leader hierarchical hierarchical node_aggregation"; do
    set -- $forced
    matrix=$(timeout 300 sh "$testbed" run -np 4 --map-by node \
        --mca mca_base_component_path "$LOOM_BUILD/coll/component-path:$ompi_dir" \
        --mca coll_loom_priority 100 --mca coll_loom_stats 1 $rails_args \
        --mca coll_loom_allreduce_algorithm "$1" --mca coll_loom_reduce_scatter_algorithm "$2" \
        --mca coll_loom_reduce_scatter_block_algorithm "$2" --mca coll_loom_allgather_algorithm "$3" \
        --mca coll_loom_alltoall_algorithm "$4" "$LOOM_BUILD/tests/mpi/test_component" 2>&1)
    if echo "$matrix" | grep -q "^test_component np=4: 0 failures" &&
        echo "$matrix" | grep -Eq "^  allreduce +[1-9][0-9]* .* $1=[1-9]" &&
        echo "$matrix" | grep -Eq "^  alltoall +[1-9][0-9]* .* $4=[1-9]" &&
        { [ -z "$rails_args" ] || echo "$matrix" | grep -Eq "rail1_sent_bytes=[1-9]"; }; then
        echo "PASS: test_component across the testbed with $1 / $2 / $3 / $4 forced${rails_args:+, over the rails}"
    else
        echo "FAIL: test_component across the testbed with $1 / $2 / $3 / $4 forced"
        echo "$matrix" | tail -20
        status=1
    fi
done
# Faults across the nodes: the last rank skips an MPI_Allreduce (under
# hang_abort every other rank's call fails, its node-mate naming it), and
# ranks call one collective with different counts or types (every rank
# fails on it or, having finished first, on the next: revoke notices).
component="--mca mca_base_component_path $LOOM_BUILD/coll/component-path:$ompi_dir --mca coll_loom_priority 100"
hung=$(timeout 300 sh "$testbed" run -np 4 --map-by node $component $rails_args --mca coll_loom_hang_timeout 1 \
    --mca coll_loom_hang_abort 1 "$LOOM_BUILD/tests/mpi/test_hang_report" -m 2>&1)
if echo "$hung" | grep -q "^test_hang_report np=4: .* 0 failures$" &&
    echo "$hung" | grep -q "^coll/loom: allreduce on .*waiting for ranks 3:"; then
    echo "PASS: a rank that skips a collective across the testbed is named by its node-mate"
else
    echo "FAIL: test_hang_report across the testbed"
    echo "$hung" | tail -15
    status=1
fi
mismatched=$(timeout 300 sh "$testbed" run -np 4 --map-by node $component $rails_args \
    "$LOOM_BUILD/tests/mpi/test_mismatch" -m 2>&1)
if echo "$mismatched" | grep -q "^test_mismatch np=4: .* 0 failures$"; then
    echo "PASS: $(echo "$mismatched" | grep "^test_mismatch np=4:") (across the testbed)"
else
    echo "FAIL: test_mismatch across the testbed"
    echo "$mismatched" | grep -v "^coll/loom" | tail -15
    status=1
fi
# rail-down / rail-up act on both ends of one rail, and only on it.
link_state() { ip -n "$1" -br link show "$2" 2>/dev/null | awk '{print $2}'; }
sh "$testbed" rail-down 1 1 >/dev/null
down="$(link_state loomtest-n1 rail1) $(link_state loomtest-sw r1-1-sw) $(link_state loomtest-n1 rail0)"
sh "$testbed" rail-up 1 1 >/dev/null
sleep 1  # the carrier comes back a moment after both ends are up
up="$(link_state loomtest-n1 rail1) $(link_state loomtest-sw r1-1-sw)"
if [ "$down" = "DOWN DOWN UP" ] && [ "$up" = "UP UP" ]; then
    echo "PASS: testbed rail-down / rail-up (both ends of rail1 of n1: $down, then $up)"
else
    echo "FAIL: testbed rail-down / rail-up: after down '$down', after up '$up'"
    status=1
fi
# A rail cut mid-run (with UCX): 30 validated 1 MiB allreduces, rail 1 of
# node 1 down after the 8th and up after the 18th. Every result must be
# right, the failure seen and the rail left out, then back and counted.
if [ -n "$rails_args" ]; then
    cut=$(timeout 300 sh "$(dirname "$testbed")/cut-rail.sh" 2 30 131072 8 18 1 1 $rails_args \
        --mca coll_loom_rail_stall_ms 1000 --mca coll_loom_rail_refresh_calls 4 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && echo "$cut" | grep -q "^test_rail_failover np=2: 30 iterations, 0 wrong elements" &&
        echo "$cut" | grep -q "loom: rank [01]: rail rail1 failed at " &&
        echo "$cut" | grep -q "rails: .*failover through the pml; rail1 left out at .*; rail1 back at " &&
        echo "$cut" | grep -Eq "rail1_failures=1 rail1_revivals=1 rail1_pieces_sent_below=[0-9]"; then
        echo "PASS: a rail cut mid-run: every result right, rail1 left out and back"
        echo "$cut" | grep "^loom\|^testbed"
    else
        echo "FAIL: a rail cut mid-run (exit $rc)"
        echo "$cut" | tail -40
        status=1
    fi
fi
# A sender that has returned while its receiver finds the rail dead: each
# iteration one rank sends 32 KiB (one rail, an eager UCX message that
# completes once in the socket) and everyone enters MPI_Barrier, Open MPI's
# own; rail 0 of node 0 is down for iterations 5-8. The receiver asks for
# the message again while the sender waits in the barrier: coll/loom's
# progress callback (loom_progress) must send it below, and libloom-mpi,
# which has no such hook, must finish the call only once it is answered.
if [ -n "$rails_args" ]; then
    one_way="-x TEST_RAIL_FAILOVER_ONE_WAY=1 -x UCX_RNDV_THRESH=inf"
    for how in coll libloom-mpi; do
        if [ $how = coll ]; then
            extra="$rails_args --mca coll_loom_rail_stall_ms 500 --mca coll_loom_rail_refresh_calls 4"
        else
            extra="--mca coll ^loom -x LD_PRELOAD=$LOOM_BUILD/pmpi/.libs/libloom-mpi.so -x LOOM_RAILS=rail0,rail1
                -x LOOM_UCX_TLS=tcp -x LOOM_RAIL_STALL_MS=500 -x LOOM_RAIL_REFRESH_CALLS=4"
        fi
        # shellcheck disable=SC2086
        cut=$(timeout 120 sh "$(dirname "$testbed")/cut-rail.sh" 2 12 4096 4 8 0 0 $extra $one_way 2>&1)
        rc=$?
        if [ $rc -eq 0 ] && echo "$cut" | grep -q "^test_rail_failover np=2: 12 iterations, 0 wrong elements" &&
            echo "$cut" | grep -q "loom: rank 1: rail rail0 failed at "; then
            echo "PASS: a sender back in MPI_Barrier answers a receiver whose rail died ($how): every result right"
        else
            echo "FAIL: a sender back in MPI_Barrier, its receiver's rail dead ($how, exit $rc$([ $rc -eq 124 ] && echo ': a hang'))"
            echo "$cut" | tail -30
            status=1
        fi
        sh "$testbed" rail-up 0 0 >/dev/null 2>&1 || true
    done
fi
# Grouping is checked; the rail rate is printed (a speed, not a verdict).
sh "$testbed" check || { echo "FAIL: testbed check: ranks not grouped by node"; status=1; }
[ $status -eq 0 ] && echo "PASS: a Loom allreduce across a 2-node testbed${rails_args:+ over 2 UCX rails}"
exit $status
