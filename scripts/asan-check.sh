#!/bin/sh
# AddressSanitizer and UndefinedBehaviorSanitizer check: builds libloom,
# coll/loom, the unit tests and the MPI test programs with
# -fsanitize=address,undefined in build-asan/ (or LOOM_ASAN_BUILD, any
# folder: CI builds outside the source tree), then runs the unit tests
# (the algorithm matrices in part: time) and libloom's and coll/loom's MPI
# tests on 2 and 3 ranks (all programs but test_persistent: its own malloc).
# Any report fails the run: a memory error, undefined behaviour (UBSan
# halts at the first) or a leak at exit (LeakSanitizer;
# scripts/asan-lsan.supp suppresses leaks of Open MPI only, each with its
# reason).
# With --in-source (CI) it builds in a fresh copy of the tree (the files git
# tracks or would track), in the source folder itself, as
# `autoreconf -fi && ./configure && make` does, and checks that loom-info
# runs there: one build answers both questions.
# Usage: sh scripts/asan-check.sh [--in-source]   (from the source tree)
set -eu
cd "$(dirname "$0")/.."
start=$(date +%s)
if [ "${1:-}" = --in-source ]; then
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/loom-asan-in-source.XXXXXX")
    trap 'rm -rf "$scratch"' EXIT
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files -z --cached --others --exclude-standard | tar -cf - --null -T - | tar -xf - -C "$scratch"
    else
        tar -cf - --exclude='./build*' --exclude=./autom4te.cache --exclude=./configure --exclude=./Makefile . |
            tar -xf - -C "$scratch"
    fi
    cd "$scratch"
    LOOM_ASAN_BUILD=.
elif [ -n "${1:-}" ]; then
    echo "usage: sh scripts/asan-check.sh [--in-source]" >&2
    exit 2
fi
src=$(pwd)
[ -x configure ] || autoreconf -fi >/dev/null
mkdir -p "${LOOM_ASAN_BUILD:-build-asan}"
cd "${LOOM_ASAN_BUILD:-build-asan}"
# A folder configured from another source tree would build that tree.
if [ -f Makefile ] && ! grep -qx "abs_top_srcdir = $src" Makefile; then
    echo "FAIL: asan: $(pwd) was configured from $(sed -n 's/^abs_top_srcdir = //p' Makefile), not $src; remove it or set LOOM_ASAN_BUILD to another folder"
    exit 1
fi
[ -f Makefile ] || "$src/configure" --quiet --enable-sanitizers=address,undefined
# -O1, as ASan advises, instead of -O3: half the compile time on 2 cores.
opt="LOOM_OPT_FLAGS=-O1 -g"
coll=no
grep -q '^ompicomponent_LTLIBRARIES = coll/mca_coll_loom.la' Makefile && coll=yes
ucx=no
[ -n "$(sed -n 's/^UCX_LIBS = *//p' Makefile)" ] && ucx=yes
make -j"$(nproc)" "$opt" src/libloom.la >/dev/null
programs="tests/mpi/test_mpi_collectives tests/mpi/test_mpi_errors tests/mpi/test_progress_thread
    tests/mpi/test_comm_lifecycle_libloom tests/mpi/test_hang_report perf/loom-soak pmpi/libloom-mpi.la
    tests/mpi/test_component_linked"
# Not test_persistent: it replaces malloc and free with glibc's to count
# allocations, so memory from ASan's allocator reaches glibc's free.
[ $coll = yes ] && programs="$programs coll/mca_coll_loom.la tests/mpi/test_component tests/mpi/test_comm_lifecycle
    tests/mpi/test_mpi_t tests/mpi/test_nonblocking_only"
make -j"$(nproc)" "$opt" tests/unit/loom_unit_tests src/loom-info $programs >/dev/null
build_s=$(($(date +%s) - start))

export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"
export LSAN_OPTIONS="suppressions=$src/scripts/asan-lsan.supp print_suppressions=0"
# Leaks are found at exit, once the libraries have unloaded what they
# dlopen'ed (Open MPI's components, UCX's transports): memory that only
# their globals held would read as leaked, and their frames as unknown.
# A stub dlclose, preloaded, keeps them (ASan then need not come first).
printf 'int dlclose(void *handle) { (void)handle; return 0; }\n' >no-dlclose.c
cc -shared -fPIC -o no-dlclose.so no-dlclose.c
preload=$(pwd)/no-dlclose.so
export ASAN_OPTIONS="verify_asan_link_order=0"
status=0
reports="ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:"
# unit_check LOG RC LABEL: a PASS counts its tests; a failure or a report fails.
unit_check() {
    if [ "$2" -eq 0 ] && ! grep -q "$reports" "$1"; then
        unit_passed=$((unit_passed + $(grep -c '^\[       OK' "$1" || true)))
    else
        echo "FAIL: asan unit tests $3 (exit $2)"
        # A failure with neither a report nor a failed test (an abort, a
        # signal, a sanitizer's own fatal error) shows the log's end.
        if grep -q "$reports\|^\[  FAILED" "$1"; then
            grep -A30 "$reports\|^\[  FAILED" "$1" | head -80
        else
            tail -40 "$1"
        fi
        status=1
    fi
}
# unit LOG FILTER [ASAN_OPTIONS]: the unit tests FILTER selects, in two
# shards side by side (a test's ranks, as threads, keep about one core busy).
# LeakSanitizer's own failure to stop the threads at exit (its "fatal
# error", not a leak) runs that shard once more, and says so.
unit() {
    for i in 0 1; do
        (
            for try in 1 2; do
                rc=0
                GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$i LD_PRELOAD="$preload" ASAN_OPTIONS="$ASAN_OPTIONS ${3:-}" \
                    ./tests/unit/loom_unit_tests --gtest_filter="$2" >"$1.$i" 2>&1 || rc=$?
                [ $rc -ne 0 ] && [ $try = 1 ] && grep -q "LeakSanitizer has encountered a fatal error" "$1.$i" || break
                echo "asan: LeakSanitizer failed at exit of $2 (shard $i), not a leak; running it again:"
                grep -B2 -A4 "LeakSanitizer has encountered a fatal error" "$1.$i" | head -12
            done
            echo $rc >"$1.$i.rc"
        ) &
    done
    wait
    for i in 0 1; do unit_check "$1.$i" "$(cat "$1.$i.rc")" "$2 (shard $i)"; done
}
if LD_PRELOAD="$preload" ./src/loom-info -a >loom-info.log 2>&1 && ! grep -q "$reports" loom-info.log; then
    echo "PASS: loom-info runs where it was built ($(pwd))"
else
    echo "FAIL: loom-info built in $(pwd) does not run cleanly:"
    head -40 loom-info.log
    status=1
fi
unit_passed=0
# All but the algorithm matrices first.
unit asan-unit.log '-AllAlgorithms/AlgorithmMatrix.*:UcxFailover.*'
# The rail failover tests without leak detection: a rail that failed keeps
# its UCX workers and endpoints to the end of the process, by design
# (RailWorkers::~RailWorkers), and UCX holds endpoints in memory it maps
# itself, which LeakSanitizer does not scan: their parts read as leaked.
[ $ucx = yes ] && unit asan-unit-failover.log 'UcxFailover.*' detect_leaks=0
# Over the shared-memory transport (rings, single copy and the rendezvous
# path interleaved, 1 to 17 ranks run in turn), two algorithms of each
# collective, a flat one and a node-aware one, in two shards side by side.
# All 28 took 5 minutes here before the matrices kept their transports
# (16f7554), the matrix of every size, count, type and op in process
# (MatchesReferenceForEverySizeCountTypeAndOp) an hour; every algorithm
# runs in the MPI tests below.
matrix=
for a in allreduce_ring allreduce_hier_leader reduce_scatter_pairwise reduce_scatter_block_hierarchical \
    allgather_bruck allgather_rail_ring alltoall_scattered alltoall_node_aggregation; do
    matrix="$matrix${matrix:+:}AllAlgorithms/AlgorithmMatrix.MatchesReferenceOverSharedMemory/$a"
done
unit asan-matrix.log "$matrix"
[ $status -eq 0 ] && echo "PASS: asan unit tests ($unit_passed tests)"
unit_s=$(($(date +%s) - start - build_s))

# The MPI tests: the ranks are the test programs, built with ASan; Open
# MPI's libraries and components are not. The full unwinder walks through
# Open MPI's frames, which have no frame pointers, so that the
# suppressions match frames below them.
export ASAN_OPTIONS="verify_asan_link_order=0 fast_unwind_on_malloc=0"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_mpi_yield_when_idle=1
ompi_dir=$(pkg-config --variable=libdir ompi-c 2>/dev/null)/openmpi3
[ -d "$ompi_dir" ] || ompi_dir=$(pkg-config --variable=libdir ompi-c 2>/dev/null)/openmpi
mkdir -p coll/component-path
ln -sf "$(pwd)/coll/.libs/mca_coll_loom.so" coll/component-path/mca_coll_loom.so
component="--mca mca_base_component_path $(pwd)/coll/component-path:$ompi_dir --mca coll_loom_priority 100"
passed=0 failed=0
# run NP VERDICT MPIRUN_ARGS...: passes when mpirun succeeds, the output
# has a line matching VERDICT and no sanitizer report.
# Each run's time goes to asan-times.txt; the slowest are printed at the
# end, for the suite's time budget (docs/reliability.md).
: >asan-times.txt
run() {
    np=$1 verdict=$2
    shift 2
    run_start=$(date +%s)
    if timeout 600 mpirun --oversubscribe -np "$np" -x LD_PRELOAD="$preload" "$@" >asan-mpi.log 2>&1 &&
        grep -q "$verdict" asan-mpi.log && ! grep -q "$reports" asan-mpi.log; then
        passed=$((passed + 1))
        echo "$(($(date +%s) - run_start)) s: np=$np $*" >>asan-times.txt
    else
        failed=$((failed + 1))
        echo "FAIL: asan np=$np $*"
        if grep -q "$reports" asan-mpi.log; then
            grep -A30 "$reports" asan-mpi.log | head -60
        else
            tail -15 asan-mpi.log
        fi
        status=1
    fi
}
for np in 2 3; do
    # libloom: every algorithm forced, over shared memory (rings, single
    # copy), MPI alone, emulated nodes, UCX rails, the progress thread.
    ok="^test_mpi_collectives np=$np: .* 0 failures$"
    run $np "$ok" ./tests/mpi/test_mpi_collectives
    run $np "$ok" -x LOOM_PROGRESS_THREAD=on ./tests/mpi/test_mpi_collectives
    run $np "$ok" -x LOOM_SHARED_MEMORY=0 ./tests/mpi/test_mpi_collectives
    run $np "$ok" -x LOOM_SINGLE_COPY=2 -x LOOM_SINGLE_COPY_MIN_BYTES=64 ./tests/mpi/test_mpi_collectives
    run $np "$ok" -x LOOM_TOPOLOGY=nodes=2 ./tests/mpi/test_mpi_collectives
    [ $ucx = yes ] && run $np "$ok" -x LOOM_TOPOLOGY=nodes=2 -x LOOM_RAILS=lo,lo -x LOOM_UCX_TLS=tcp \
        -x LOOM_RAIL_MIN_BYTES=0 -x LOOM_TEST_EXPECT_RAILS=2 ./tests/mpi/test_mpi_collectives
    run $np "^test_mpi_errors np=$np: .* 0 failures$" ./tests/mpi/test_mpi_errors
    run $np "^test_progress_thread np=$np: .*: PASS" ./tests/mpi/test_progress_thread --libloom-only
    ok="^test_comm_lifecycle_libloom np=$np: .* 0 failures$"
    run $np "$ok" ./tests/mpi/test_comm_lifecycle_libloom --table -t 60
    run $np "$ok" -x LOOM_PROGRESS_THREAD=on ./tests/mpi/test_comm_lifecycle_libloom --rows -l 20 -t 60
    # A rank skips a call: hang_abort withdraws the others' operations.
    # Alltoall over MPI alone leaves sends no rank will ever receive in Open
    # MPI, which cannot cancel them, with the communicator they hold: there
    # those are not counted as leaks.
    ok="^test_hang_report np=$np: .* 0 failures$"
    run $np "$ok" ./tests/mpi/test_hang_report -c allreduce -n 1024
    run $np "$ok" -x ASAN_OPTIONS="$ASAN_OPTIONS detect_leaks=0" -x LOOM_SHARED_MEMORY=0 \
        ./tests/mpi/test_hang_report -c alltoall -n 1024
    run $np "^loom-soak np=$np seed=[0-9]*: [0-9]* calls, 0 failures" ./perf/loom-soak -n 100000 -t 20
    # libloom-mpi, linked (the program's ASan runtime comes first), with and
    # without the progress thread.
    ok="^test_component np=$np: 0 failures"
    run $np "$ok" -x LOOM_MPI_STATS=1 ./tests/mpi/test_component_linked
    run $np "$ok" -x LOOM_PROGRESS_THREAD=on ./tests/mpi/test_component_linked
    [ $coll = yes ] || continue
    # coll/loom: the default selection over shared memory, the PML alone
    # and both mixed, emulated nodes, the progress thread; communicators
    # made and freed around its calls; MPI_T; nonblocking calls only.
    ok="^test_component np=$np: 0 failures"
    # $component unquoted: its words are mpirun's arguments.
    run $np "$ok" $component --mca coll_loom_stats 1 ./tests/mpi/test_component
    run $np "$ok" $component --mca coll_loom_shared_memory 0 ./tests/mpi/test_component
    run $np "$ok" $component --mca coll_loom_shm_max_bytes 100 ./tests/mpi/test_component
    run $np "$ok" $component --mca coll_loom_topology nodes=2 ./tests/mpi/test_component
    run $np "$ok" $component --mca coll_loom_progress_thread on ./tests/mpi/test_component
    ok="^test_comm_lifecycle np=$np: .* 0 failures$"
    run $np "$ok" $component ./tests/mpi/test_comm_lifecycle --table -t 60
    run $np "$ok" $component ./tests/mpi/test_comm_lifecycle --rows -l 20 -t 60
    # Without leak detection: the program leaves an MPI_Iallreduce unwaited
    # at MPI_Finalize on purpose (the thread must still stop), and its
    # request, which the program never frees, is then reported.
    run $np "^test_progress_thread np=$np: .*: PASS" $component --mca coll_loom_progress_thread on \
        -x ASAN_OPTIONS="$ASAN_OPTIONS detect_leaks=0" ./tests/mpi/test_progress_thread
    run $np "^test_mpi_t: ok" $component ./tests/mpi/test_mpi_t
    run $np "rank 0: .* 0 wrong elements" $component ./tests/mpi/test_nonblocking_only
done
if [ $failed -eq 0 ]; then
    echo "PASS: asan MPI tests ($passed runs of libloom's$([ $coll = yes ] && echo " and coll/loom's") tests on 2 and 3 ranks)"
else
    echo "FAIL: asan MPI tests ($failed of $((passed + failed)) runs)"
fi
echo "asan: the slowest MPI runs:"
sort -rn asan-times.txt | head -8 | sed "s|$(pwd)/||g; s/^/  /"
echo "asan check took $(($(date +%s) - start)) s (build $build_s s, unit tests $unit_s s)"
exit $status
