#!/bin/sh
# Runs the MPI integration tests under mpirun at 1..5 ranks (more ranks than
# cores: --oversubscribe). Each run has a timeout so a hang fails instead of
# blocking the suite. Skips (exit 77) when no launcher was found.
# MPIEXEC may be Open MPI's mpirun or MPICH's Hydra (mpiexec.mpich:
# scripts/mpich-check.sh), whose options differ.
set -u
# LOOM_TESTS_MPI_ONLY=1 (scripts/mpich-check.sh): only the runs whose outcome
# can depend on the MPI library beneath; those of Loom's own shared memory,
# parsing and tools, which the suite runs under Open MPI, are left out.
mpi_only=${LOOM_TESTS_MPI_ONLY:-0}
# The test programs are built in the build tree, not beside this script.
dir=${top_builddir:-.}/tests/mpi
. "$(dirname "$0")/launcher.sh"
# env_args VAR=VALUE...: the launcher's arguments that set them on every rank.
env_args() {
    for v; do
        if [ $hydra = yes ]; then printf ' -genv %s %s' "${v%%=*}" "${v#*=}"; else printf ' -x %s' "$v"; fi
    done
}
status=0
# Whether libloom was built with UCX (its rails), asked once.
ucx_built=no
"${top_builddir:-.}/src/loom-info" --version | grep -q "built with:.* ucx" && ucx_built=yes
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The algorithms as libloom's API reports them ("collective name" lines):
# test_mpi_collectives forces each of these, and loom-info and the man
# pages must list each of them.
if ! "$dir/test_mpi_collectives" --list-algorithms | LC_ALL=C sort >"$tmp/api" || [ ! -s "$tmp/api" ]; then
    echo "FAIL: test_mpi_collectives --list-algorithms (loom_algorithm_info) gave no algorithms"
    status=1
fi
: >"$tmp/forced"

# collectives NP [VAR=VALUE...]: test_mpi_collectives on NP ranks with
# those variables set on every rank; the algorithms it forced go to
# $tmp/forced.
collectives() {
    np=$1
    shift
    xs=
    [ $hydra = yes ] || for v; do xs="$xs -x ${v%%=*}"; done
    env "$@" timeout 300 "$MPIEXEC" $xs $oversubscribe -np "$np" "$dir/test_mpi_collectives" >"$tmp/run.out" 2>&1
    rc=$?
    cat "$tmp/run.out"
    sed -n 's/^test_mpi_collectives np=[0-9]* forced: //p' "$tmp/run.out" | tr ' ' '\n' | tr / ' ' >>"$tmp/forced"
    return $rc
}

for np in 1 2 3 4 5; do
    if ! collectives "$np"; then
        echo "FAIL: test_mpi_collectives at np=$np"
        status=1
    fi
    if ! timeout 300 "$MPIEXEC" $oversubscribe -np "$np" "$dir/test_mpi_errors"; then
        echo "FAIL: test_mpi_errors at np=$np"
        status=1
    fi
done
# fault PROGRAM NP LABEL ARGS REPORT [VAR=VALUE...]: a run of a fault test;
# its verdict line must say 0 failures, and its output hold a line matching
# REPORT when that is not empty.
fault() {
    program=$1 np=$2 label=$3 args=$4 report=$5
    shift 5
    xs=
    [ $hydra = yes ] || for v; do xs="$xs -x ${v%%=*}"; done
    if env "$@" timeout 300 "$MPIEXEC" $xs $oversubscribe -np "$np" "$dir/$program" $args >"$tmp/run.out" 2>&1 &&
        grep -q "^$program np=$np: .* 0 failures$" "$tmp/run.out" &&
        { [ -z "$report" ] || grep -q "$report" "$tmp/run.out"; }; then
        echo "PASS: $(grep "^$program np=$np:" "$tmp/run.out") ($label)"
    else
        echo "FAIL: $program np=$np ($label)"
        tail -15 "$tmp/run.out"
        status=1
    fi
}
# Hang reports: the last rank skips a collective (test_hang_report.c). On
# one node, over emulated nodes and without shared memory; each run's
# reports on stderr must name the skipper, and hang_abort's errors too.
# hang NP LABEL ARGS [VAR=VALUE...]
hang() {
    np=$1 label=$2 args=$3
    shift 3
    fault test_hang_report "$np" "$label" "$args" \
        "^loom\[[0-9]*\]: hang_timeout: .*waiting for .*ranks\( [0-9]*\)* $((np - 1))\b" "$@"
}
hang 3 "one node, allreduce" "-c allreduce"
hang 3 "one node, alltoall, progress thread on" "-c alltoall -n 20000" LOOM_PROGRESS_THREAD=on
hang 4 "2 emulated nodes" "-c allreduce" LOOM_TOPOLOGY=nodes=2
hang 2 "without shared memory" "-c allreduce -n 1024" LOOM_SHARED_MEMORY=0
hang 3 "without shared memory, alltoall" "-c alltoall -n 1024" LOOM_SHARED_MEMORY=0
# Ranks that call one collective with different arguments all fail, none
# waits for ever (test_mismatch.c): on one node all on that call (-s),
# told in their own inboxes; between emulated nodes or without shared
# memory through MPI's notices. Open MPI's single-copy get (vader's CMA)
# writes a message larger than its receive past the receive's end, so those
# runs turn it off; Loom's own shared memory checks sizes first.
# mismatch NP LABEL ARGS [VAR=VALUE...]
mismatch() {
    np=$1 label=$2 args=$3
    shift 3
    fault test_mismatch "$np" "$label" "$args" "" "$@"
}
if [ "$mpi_only" = 1 ]; then
    mismatch 3 "through the MPI beneath" ""
else
    mismatch 3 "one node" -s
    mismatch 5 "one node" -s
    mismatch 4 "2 emulated nodes" "" LOOM_TOPOLOGY=nodes=2 OMPI_MCA_btl_vader_single_copy_mechanism=none
    mismatch 3 "without shared memory" "" LOOM_SHARED_MEMORY=0 OMPI_MCA_btl_vader_single_copy_mechanism=none
fi
# The MPI transport alone, without the shared-memory path.
for np in 2 3; do
    if ! collectives "$np" LOOM_SHARED_MEMORY=0; then
        echo "FAIL: test_mpi_collectives at np=$np with LOOM_SHARED_MEMORY=0"
        status=1
    fi
done
# Shared-memory messages of 64 bytes or more read by single copy
# (process_vm_readv) between the processes.
for np in 2 3 5; do
    [ "$mpi_only" = 1 ] && break
    if ! collectives "$np" LOOM_SINGLE_COPY=2 LOOM_SINGLE_COPY_MIN_BYTES=64; then
        echo "FAIL: test_mpi_collectives at np=$np with LOOM_SINGLE_COPY=2"
        status=1
    fi
done
# The progress thread on: every algorithm forced, nonblocking and
# persistent calls driven by the thread (one node), or partly by the
# caller (two emulated nodes: messages between them go through MPI).
for spec in "2 nodes=1" "3 nodes=1" "4 nodes=2"; do
    np=${spec%% *}
    [ "$mpi_only" = 1 ] && [ "$np" -lt 4 ] && continue
    if ! collectives "$np" LOOM_PROGRESS_THREAD=on LOOM_TOPOLOGY="${spec#* }"; then
        echo "FAIL: test_mpi_collectives at np=$np with the progress thread on (${spec#* })"
        status=1
    fi
done
for np in 1 2 4; do
    if timeout 300 "$MPIEXEC" $oversubscribe -np "$np" "$dir/test_progress_thread" --libloom-only >"$tmp/run.out" 2>&1 &&
        grep -q "^test_progress_thread np=$np: .*: PASS" "$tmp/run.out"; then
        echo "PASS: $(grep "^test_progress_thread np=$np:" "$tmp/run.out")"
    else
        echo "FAIL: test_progress_thread np=$np"
        tail -15 "$tmp/run.out"
        status=1
    fi
done
# Emulated nodes: 4 ranks as 2 nodes, and 5 ranks on uneven nodes whose
# ranks are not consecutive; every algorithm is forced in turn, the
# node-aware ones across nodes.
for spec in "4 nodes=2" "5 0,1,1,0,2;rails=2"; do
    np=${spec%% *}
    [ "$mpi_only" = 1 ] && [ "$np" -eq 5 ] && continue
    topo=${spec#* }
    # On 5 ranks the alltoallv counts are learnt as above 64 ranks: the node's ranks' and every rank's totals.
    at_scale=
    [ "$np" -eq 5 ] && at_scale=LOOM_ALLTOALLV_COUNT_MATRIX_MAX_RANKS=0
    if ! collectives "$np" LOOM_TOPOLOGY="$topo" $at_scale; then
        echo "FAIL: test_mpi_collectives at np=$np with LOOM_TOPOLOGY=$topo"
        status=1
    fi
done
# The UCX rails (when built with UCX): 2 rails over loopback between
# emulated nodes, every algorithm forced, each rail carrying bytes both
# ways (on 4 ranks every inter-node message, small ones included:
# rail_min_bytes 0); then bad rails, which leave the rails out with the
# reason named and change no result.
if [ $ucx_built = yes ]; then
    for spec in "4 nodes=2 0" "5 0,1,1,0,2;rails=2 16KiB"; do
        set -- $spec
        np=$1 topo=$2
        if ! collectives "$np" LOOM_TOPOLOGY="$topo" LOOM_RAILS=lo,lo LOOM_UCX_TLS=tcp LOOM_RAIL_MIN_BYTES="$3" \
            LOOM_TEST_EXPECT_RAILS=2; then
            echo "FAIL: test_mpi_collectives at np=$np with LOOM_TOPOLOGY=$topo over 2 UCX rails"
            status=1
        fi
    done
    [ "$mpi_only" = 1 ] ||
    for bad in "LOOM_RAILS=lo,no_such_rail|no network interface 'no_such_rail'" \
        "LOOM_RAIL_WEIGHTS=2,x|rail_weights = '2,x': expected positive numbers" \
        "LOOM_RAIL_WEIGHTS=1,2,3|rail_weights = '1,2,3' gives 3 weights for 2 rails"; do
        setting=${bad%%|*}
        want=${bad#*|}
        case $setting in LOOM_RAILS=*) rails=$setting ;; *) rails=LOOM_RAILS=lo,lo ;; esac
        if collectives 4 LOOM_TOPOLOGY=nodes=2 "$rails" "$setting" LOOM_UCX_TLS=tcp &&
            grep -q "rails left out, the point-to-point transport carries messages between nodes: .*$want" "$tmp/run.out"; then
            echo "PASS: $setting leaves the rails out with the reason named"
        else
            echo "FAIL: $setting: the rails were not left out with the reason '$want'"
            status=1
        fi
    done
fi
# The reproducible parameter (test_reproducible.c): every reducing algorithm
# forced in turn gives the bits of the first call, on every rank; and runs
# on the same ranks print the same hash of the results whatever the nodes,
# the progress thread or the rails.
# run_program PROGRAM NP LABEL [VAR=VALUE...]: passes when PROGRAM's line
# "PROGRAM np=NP: ... 0 failures" shows; its output stays in $tmp/run.out.
run_program() {
    prog=$1 np=$2 label=$3
    shift 3
    xs=
    [ $hydra = yes ] || for v; do xs="$xs -x ${v%%=*}"; done
    if env "$@" timeout 300 "$MPIEXEC" $xs $oversubscribe -np "$np" "$dir/$prog" >"$tmp/run.out" 2>&1 &&
        grep -q "^$prog np=$np: .* 0 failures$" "$tmp/run.out"; then
        echo "PASS: $(grep "^$prog np=$np:" "$tmp/run.out") ($label)"
        return 0
    fi
    echo "FAIL: $prog np=$np ($label)"
    tail -15 "$tmp/run.out"
    status=1
    return 1
}
# reproducible NP LABEL [VAR=VALUE...]
reproducible() {
    run_program test_reproducible "$@" &&
        echo "$1 $(sed -n 's/.*results hash \([0-9a-f]*\),.*/\1/p' "$tmp/run.out") $2" >>"$tmp/hashes"
}
: >"$tmp/hashes"
reproducible 4 "one node"
if [ "$mpi_only" != 1 ]; then
    for np in 1 2 3 5 8; do reproducible "$np" "one node"; done
    reproducible 4 "2 emulated nodes" LOOM_TOPOLOGY=nodes=2
    reproducible 4 "progress thread on" LOOM_PROGRESS_THREAD=on
    reproducible 4 "adapt on" LOOM_ADAPT=1
    reproducible 5 "uneven emulated nodes" "LOOM_TOPOLOGY=0,1,1,0,2;rails=2"
    if [ $ucx_built = yes ]; then
        reproducible 4 "2 emulated nodes, 2 UCX rails" LOOM_TOPOLOGY=nodes=2 LOOM_RAILS=lo,lo LOOM_UCX_TLS=tcp \
            LOOM_RAIL_MIN_BYTES=0
    fi
fi
for np in $(cut -d' ' -f1 "$tmp/hashes" | sort -u); do
    if [ "$(awk -v n="$np" '$1 == n { print $2 }' "$tmp/hashes" | sort -u | wc -l)" -ne 1 ]; then
        echo "FAIL: test_reproducible np=$np: the results differ between runs:"
        awk -v n="$np" '$1 == n' "$tmp/hashes"
        status=1
    fi
done
# Parameter adapt (test_adapt.c): every adaptable collective many times
# over at counts around the rank count, checked exactly, every rank running
# the same algorithm on every call while the size classes learn and explore.
# adapt_run NP LABEL [VAR=VALUE...]
adapt_run() { run_program test_adapt "$@"; }
adapt_run 4 "one node"
if [ "$mpi_only" != 1 ]; then
    for np in 1 2 3 5; do adapt_run "$np" "one node"; done
    adapt_run 4 "2 emulated nodes" LOOM_TOPOLOGY=nodes=2
    adapt_run 5 "uneven emulated nodes, progress thread on" "LOOM_TOPOLOGY=0,1,1,0,2" LOOM_PROGRESS_THREAD=on
    if [ $ucx_built = yes ]; then
        adapt_run 4 "2 emulated nodes, 2 UCX rails" LOOM_TOPOLOGY=nodes=2 LOOM_RAILS=lo,lo LOOM_UCX_TLS=tcp \
            LOOM_RAIL_MIN_BYTES=0
    fi
fi
# Communicators made, used and freed around libloom's calls
# (test_comm_lifecycle.c): issue 30's programs, then every scenario under
# the default selection and every row of forced algorithms, with the
# progress thread off and on, on one node, on emulated nodes and over the
# UCX rails. A call over the 60 s hang limit fails the run and names itself.
# lifecycle NP LABEL ARGS [VAR=VALUE...]: ARGS (one word list) go to the program.
lifecycle() {
    np=$1 label=$2 args=$3
    shift 3
    xs=
    [ $hydra = yes ] || for v; do xs="$xs -x ${v%%=*}"; done
    # $args unquoted: its words are the program's arguments.
    if env "$@" timeout 300 "$MPIEXEC" $xs $oversubscribe -np "$np" "$dir/test_comm_lifecycle_libloom" $args -t 60 \
        >"$tmp/run.out" 2>&1 && grep -q "^test_comm_lifecycle_libloom np=$np: .* 0 failures$" "$tmp/run.out"; then
        echo "PASS: $(grep "^test_comm_lifecycle_libloom np=$np:" "$tmp/run.out") ($label)"
    else
        echo "FAIL: test_comm_lifecycle_libloom np=$np ($label)"
        tail -15 "$tmp/run.out"
        status=1
    fi
}
for np in 2 3 5 17; do
    [ "$mpi_only" = 1 ] && [ "$np" -eq 17 ] && continue
    lifecycle "$np" "the table's programs" --table
done
if [ $hydra = yes ]; then
    # MPICH's ranks poll for each other on shared cores: a run of every row
    # would take minutes here, so the default selection only.
    lifecycle 4 "default selection" "-l 20"
    lifecycle 3 "default selection, progress thread on" "-l 20" LOOM_PROGRESS_THREAD=on
else
    # The progress thread on one node and emulated nodes without rails run
    # through coll/loom (run_component_tests.sh) where it is built; here the
    # thread runs on uneven nodes, and two nodes over the rails where UCX is.
    coll_built=no
    [ -f "${top_builddir:-.}/coll/.libs/mca_coll_loom.so" ] && coll_built=yes
    lifecycle 4 "every row, one node" "--rows -l 40"
    [ $coll_built = yes ] || lifecycle 4 "every row, progress thread on" "--rows -l 40" LOOM_PROGRESS_THREAD=on
    lifecycle 5 "every row, 0,1,1,0,2;rails=2, progress thread on" "--rows -l 40" \
        "LOOM_TOPOLOGY=0,1,1,0,2;rails=2" LOOM_PROGRESS_THREAD=on
    if [ $ucx_built = yes ]; then
        lifecycle 4 "every row, nodes=2, 2 UCX rails" "--rows -l 40" LOOM_TOPOLOGY=nodes=2 LOOM_RAILS=lo,lo \
            LOOM_UCX_TLS=tcp
    fi
    if [ $coll_built = no ] || [ $ucx_built = no ]; then
        lifecycle 4 "every row, nodes=2" "--rows -l 40" LOOM_TOPOLOGY=nodes=2
    fi
fi

# test_mpi_collectives leaves out only algorithms whose restrictions
# exclude its communicator; each must have run somewhere above.
# The device (cuda_ipc) algorithms run device buffers only: run_device_tests.sh forces them.
never=$(LC_ALL=C sort -u "$tmp/forced" | LC_ALL=C comm -23 "$tmp/api" - | grep -v ' cuda_ipc_')
if [ -s "$tmp/api" ] && [ -z "$never" ]; then
    echo "PASS: every host algorithm the API reports ($(grep -vc ' cuda_ipc_' "$tmp/api")) was forced in some run"
else
    echo "FAIL: algorithms never forced by test_mpi_collectives:" $never
    status=1
fi

# list_check INFO_OUTPUT MANPAGE...: a FAIL line for each algorithm of the
# API that `loom-info -a` output or a man page's ALGORITHMS section does not
# list under its collective, and for each name they list that the API does
# not report; no output when all agree.
info_algorithms() {
    awk '/^[a-z_]+:$/ { c = substr($0, 1, length($0) - 1); next }
        c != "" && /^  [a-z_]/ { print c, $1 }' "$1"
}
# The section is ".TP", ".B collective", then its names, separated by
# commas, remarks in parentheses.
man_algorithms() {
    awk '/^\.SH / { in_section = ($0 ~ /^\.SH "?ALGORITHMS"?$/); c = ""; tag = 0; next }
        !in_section { next }
        /^\.TP/ { tag = 1; c = ""; next }
        tag && /^\.B / { c = $2; gsub(/"/, "", c); tag = 0; next }
        /^\./ { c = ""; tag = 0; next }
        c != "" {
            line = $0
            gsub(/\([^)]*\)/, "", line)
            n = split(line, w, ",")
            for (i = 1; i <= n; ++i) {
                gsub(/^[ \t]+|[ \t]+$/, "", w[i])
                if (w[i] != "") print c, w[i]
            }
        }' "$1"
}
compare_lists() {
    LC_ALL=C sort -u >"$tmp/listed"
    LC_ALL=C comm -23 "$tmp/api" "$tmp/listed" | while read -r c a; do echo "FAIL: $1 does not list $a under $c"; done
    LC_ALL=C comm -13 "$tmp/api" "$tmp/listed" | while read -r c a; do
        echo "FAIL: $1 lists $a under $c, which the API does not report"
    done
}
list_check() {
    info_algorithms "$1" | compare_lists "loom-info -a"
    shift
    for page; do man_algorithms "$page" | compare_lists "$(basename "$page")"; done
}
# coll_loom(7) lists the algorithms; so must any other page with an
# ALGORITHMS section.
mandir="$(dirname "$0")/../../man"
pages="$mandir/coll_loom.7"
for page in "$mandir"/*.[1-9]; do
    case $page in */coll_loom.7) continue ;; esac
    grep -q '^\.SH "\{0,1\}ALGORITHMS' "$page" && pages="$pages $page"
done
if ! "${top_builddir:-.}/src/loom-info" -a >"$tmp/info"; then
    echo "FAIL: loom-info -a"
    status=1
fi
missing=$(list_check "$tmp/info" $pages)
if [ -s "$tmp/api" ] && [ -z "$missing" ]; then
    echo "PASS: loom-info -a and the man pages ($(echo $pages | wc -w)) list the $(wc -l <"$tmp/api") algorithms the API reports"
else
    echo "$missing"
    status=1
fi
# The check itself: with one name left out of copies of loom-info's output
# and coll_loom(7), and an unknown one added, it must name all three.
set -- $(sed -n 1p "$tmp/api") $(sed -n '$p' "$tmp/api")
awk -v c="$1" -v a="$2" '/^[a-z_]+:$/ { cur = substr($0, 1, length($0) - 1) }
    !(cur == c && $1 == a && /^  [a-z_]/) { print }' "$tmp/info" >"$tmp/info.cut"
awk -v c="$3" -v a="$4" -v extra="$1" '/^\.SH / { in_section = ($0 ~ /ALGORITHMS/) }
    !in_section { print; next }
    /^\.TP/ { tag = 1; print; next }
    tag && /^\.B / { cur = $2; tag = 0; print; next }
    /^\./ { cur = ""; print; next }
    cur == c || cur == extra {
        n = split($0, w, ",")
        line = ""
        for (i = 1; i <= n; ++i) {
            name = w[i]
            gsub(/\([^)]*\)|[ \t]/, "", name)
            if (cur == c && name == a) continue
            line = line (line == "" ? "" : ",") w[i]
        }
        if (cur == extra && !added) { line = "no_such_algorithm, " line; added = 1 }
        print line
        next
    }
    { print }' "$mandir/coll_loom.7" >"$tmp/coll_loom.7"
caught=$(list_check "$tmp/info.cut" "$tmp/coll_loom.7")
if echo "$caught" | grep -qx "FAIL: loom-info -a does not list $2 under $1" &&
    echo "$caught" | grep -qx "FAIL: coll_loom.7 does not list $4 under $3" &&
    echo "$caught" | grep -qx "FAIL: coll_loom.7 lists no_such_algorithm under $1, which the API does not report"; then
    echo "PASS: the list check catches a name missing from loom-info or a man page, and an unknown one"
else
    echo "FAIL: the list check missed a name removed from (or added to) copies of loom-info's output and coll_loom.7:"
    echo "$caught" | sed 's/^/  /'
    status=1
fi
# loom-info --topology under mpirun reports the emulated nodes as every rank sees them.
out=$(LOOM_TOPOLOGY="0,1,1,0;rails=2" timeout 120 "$MPIEXEC" $(env_args LOOM_TOPOLOGY="0,1,1,0;rails=2") $oversubscribe -np 4 \
    "${top_builddir:-.}/src/loom-info" --topology 2>&1)
if echo "$out" | grep -q "2 nodes: \[0 3\] \[1 2\], 2 rails (emulated)" &&
    echo "$out" | grep -q "rank 2: .*node 1 of 2, local rank 1 of 2, shared_memory among 2, lane 1 of 2"; then
    echo "PASS: loom-info --topology"
else
    echo "FAIL: loom-info --topology printed:"
    echo "$out"
    status=1
fi
# loom-bench: every collective, blocking and nonblocking, through MPI and
# through libloom's API, validated (-c exits 1 on a wrong result); the CSV
# and JSON files must hold a row per size.
bench="${top_builddir:-.}/perf/loom-bench"
for api in mpi loom; do
    for coll in allreduce reduce_scatter reduce_scatter_block allgather alltoall alltoallv allgatherv \
        iallreduce ireduce_scatter ireduce_scatter_block iallgather ialltoall ialltoallv iallgatherv; do
        if ! timeout 120 "$MPIEXEC" $oversubscribe -np 3 "$bench" "$coll" --api "$api" -m 4:4096 -i 20 -x 2 -c -f \
            -T all -t 3 --bw --csv "$tmp/out.csv" --json "$tmp/out.json" >"$tmp/out.txt" 2>&1 ||
            grep -q "DATA VALIDATION ERROR\|Fail" "$tmp/out.txt" || [ "$(grep -c Pass "$tmp/out.txt")" -lt 20 ] ||
            [ "$(wc -l <"$tmp/out.csv")" -ne $(($(grep -c Pass "$tmp/out.txt") + 1)) ] ||
            [ "$(grep -c '"validation": "pass"' "$tmp/out.json")" -ne "$(grep -c Pass "$tmp/out.txt")" ]; then
            echo "FAIL: loom-bench $coll --api $api"
            cat "$tmp/out.txt"
            status=1
        fi
    done
done
echo "loom-bench: 28 validated runs done"
# The vector collectives' traffic: every kind validated through both APIs;
# the header names it and its seed, the same seed gives the same matrix on
# every launch and another seed another; a bad description is refused.
traffic_runs=0
for traffic in uniform zipf:1.2 skew:4 topk:2 topk:1:1.0:1.2; do
    for coll in alltoallv allgatherv; do
        case $coll$traffic in allgathervtopk*) continue ;; esac
        for api in mpi loom; do
            if ! timeout 120 "$MPIEXEC" $oversubscribe -np 4 "$bench" "$coll" --api "$api" -m 16:65536 -i 5 -x 1 -c \
                --traffic "$traffic" --seed 7 --link-bw 0.4 --nodes 2 >"$tmp/out.txt" 2>&1 ||
                grep -q "DATA VALIDATION ERROR\|Fail" "$tmp/out.txt" || [ "$(grep -c Pass "$tmp/out.txt")" -ne 13 ] ||
                ! grep -q "^# Traffic: " "$tmp/out.txt"; then
                echo "FAIL: loom-bench $coll --api $api --traffic $traffic"
                cat "$tmp/out.txt"
                status=1
            fi
            traffic_runs=$((traffic_runs + 1))
        done
    done
done
# The header without its seed: which rank the largest block goes to.
traffic_line() {
    timeout 120 "$MPIEXEC" $oversubscribe -np 4 "$bench" alltoallv -m 4096 -i 2 -x 0 --traffic zipf:1.2 --seed "$1" 2>&1 |
        sed -n 's/^# Traffic: zipf s=1.2, seed [0-9]*; //p'
}
first=$(traffic_line 3) again=$(traffic_line 3) other=$(traffic_line 2)
if [ -n "$first" ] && [ "$first" = "$again" ] && [ -n "$other" ] && [ "$first" != "$other" ] &&
    ! timeout 60 "$MPIEXEC" $oversubscribe -np 2 "$bench" alltoallv --traffic zipf >"$tmp/out.txt" 2>&1 &&
    grep -q "want uniform, zipf:S" "$tmp/out.txt"; then
    echo "PASS: loom-bench traffic: $traffic_runs validated runs; seeded ($first), and a bad --traffic refused"
else
    echo "FAIL: loom-bench traffic: seed 3 gave '$first' then '$again', seed 4 '$other'"
    cat "$tmp/out.txt"
    status=1
fi
# loom-compare: two configurations interleaved twice: a table with both
# medians and their ratio per size, the commands it ran, and a plot.
if LOOM_BENCH="$bench" sh "$(dirname "$0")/../../perf/loom-compare" -c allreduce -m 8:64 -r 2 -n 2 -i 20 -x 2 -o "$tmp/cmp" \
    --mpirun "$MPIEXEC $oversubscribe" flat="$(env_args LOOM_SHARED_MEMORY=0)" shm="$(env_args LOOM_SHARED_MEMORY=1)" \
    -b "--api loom" >"$tmp/cmp.out" 2>&1 &&
    [ "$(grep -Ec '^(8|16|32|64) +[0-9.]+ +[0-9.]+ +[0-9.]+$' "$tmp/cmp/allreduce.table")" -eq 4 ] &&
    [ "$(grep -c 'loom-bench allreduce' "$tmp/cmp/commands.txt")" -eq 4 ] &&
    { ! command -v gnuplot >/dev/null || [ -s "$tmp/cmp/allreduce.png" ]; }; then
    # A second run with fewer sizes in the same directory: only its own rows.
    if LOOM_BENCH="$bench" sh "$(dirname "$0")/../../perf/loom-compare" -c allreduce -m 8:16 -r 1 -n 2 -i 5 -x 1 \
        -o "$tmp/cmp" --mpirun "$MPIEXEC $oversubscribe" flat="$(env_args LOOM_SHARED_MEMORY=0)" shm="$(env_args LOOM_SHARED_MEMORY=1)" \
        -b "--api loom" >"$tmp/cmp.out" 2>&1 &&
        [ "$(grep -Ec '^[0-9]+ ' "$tmp/cmp/allreduce.table")" -eq 2 ]; then
        echo "PASS: loom-compare"
    else
        echo "FAIL: loom-compare kept an earlier run's results"
        cat "$tmp/cmp/allreduce.table"
        status=1
    fi
else
    echo "FAIL: loom-compare"
    cat "$tmp/cmp.out" "$tmp/cmp/allreduce.table" 2>/dev/null
    status=1
fi
# loom-compare's ratio is paired: the median of each repetition's ratio.
# Three made-up repetitions at 8 B, the machine in a fast (10 us) or a slow
# (14 us) mode: the sides' medians are 14 and 10.8 (0.77), but the
# loom/ompi ratios 1.05, 0.77 and 1.02 have the median 1.02.
mkdir -p "$tmp/paired"
printf '# load average before: 0 0 0\n' >"$tmp/paired/commands.txt"
for rep in "1 10 10.5" "2 14 10.8" "3 14.2 14.5"; do
    set -- $rep
    printf '8 %s 0 0\n' "$2" >"$tmp/paired/raw.allreduce.ompi.$1.txt"
    printf '8 %s 0 0\n' "$3" >"$tmp/paired/raw.allreduce.loom.$1.txt"
done
if LOOM_BENCH="$bench" sh "$(dirname "$0")/../../perf/loom-compare" --no-run -c allreduce -r 3 -o "$tmp/paired" \
    >"$tmp/paired.out" 2>&1 && grep -Eq '^8 +14.00 +10.80 +1.02$' "$tmp/paired/allreduce.table"; then
    echo "PASS: loom-compare pairs its ratios by repetition"
else
    echo "FAIL: loom-compare's ratio is not the median of the paired ratios"
    cat "$tmp/paired.out" "$tmp/paired/allreduce.table" 2>/dev/null
    status=1
fi
# The soak's short form (perf/loom_soak.c): every collective, blocking,
# nonblocking and persistent, random shapes and forced algorithms on
# communicators made and freed, every result checked, for about 30 s; a
# failure prints the seed that replays it.
soak="${top_builddir:-.}/perf/loom-soak"
if timeout 300 "$MPIEXEC" $oversubscribe -np 5 "$soak" -n 100000 -t 30 >"$tmp/soak.out" 2>&1 &&
    grep -q "^loom-soak np=5 seed=[0-9]*: [0-9]* calls, 0 failures" "$tmp/soak.out"; then
    echo "PASS: $(grep "^loom-soak np=5 seed=[0-9]*:" "$tmp/soak.out")"
else
    echo "FAIL: loom-soak np=5"
    tail -15 "$tmp/soak.out"
    status=1
fi
rm -rf "$tmp"
# Inboxes whose owner has exited (a test running alongside may own live ones).
left=$(sh "$(dirname "$0")/stale_inboxes.sh")
if [ -n "$left" ]; then
    echo "FAIL: inboxes left in /dev/shm by exited processes: $left"
    status=1
fi
exit $status
