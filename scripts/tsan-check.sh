#!/bin/sh
# ThreadSanitizer check of the progress thread: builds libloom, the unit
# tests and the MPI test programs with -fsanitize=thread in build-tsan/,
# then runs the unit tests that use threads (ranks as threads, the progress
# thread) and the MPI tests with the thread on (communicators made, used and
# freed around it among them; libloom-mpi's request table beside it). Any
# report fails the run.
# Usage: sh scripts/tsan-check.sh   (from the source tree; run by .ci/run)
set -eu
cd "$(dirname "$0")/.."
start=$(date +%s)
[ -x configure ] || autoreconf -fi >/dev/null
mkdir -p build-tsan
cd build-tsan
[ -f Makefile ] || ../configure --quiet --enable-sanitizers=thread
make -j"$(nproc)" src/libloom.la >/dev/null
make -j"$(nproc)" tests/unit/loom_unit_tests tests/mpi/test_progress_thread tests/mpi/test_mpi_collectives \
    tests/mpi/test_comm_lifecycle_libloom pmpi/libloom-mpi.la tests/mpi/test_component_linked >/dev/null
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"
# UCX's memory hooks patch madvise and mmap, which ThreadSanitizer also
# intercepts: a thread's exit then crashes in ucm_madvise.
export UCX_MEM_MMAP_HOOK_MODE=none
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_mpi_yield_when_idle=1
status=0
if ./tests/unit/loom_unit_tests --gtest_filter='ProgressThread*:*ProgressThreadMatrix*:Threads.*' >tsan-unit.log 2>&1; then
    echo "PASS: tsan unit tests ($(grep -c '^\[       OK' tsan-unit.log) tests with threads)"
else
    echo "FAIL: tsan unit tests"
    grep -A30 "WARNING: ThreadSanitizer\|FAILED" tsan-unit.log | head -60
    tail -20 tsan-unit.log
    status=1
fi
for np in 2 3; do
    if timeout 600 mpirun --oversubscribe -np "$np" ./tests/mpi/test_progress_thread --libloom-only >tsan-mpi.log 2>&1 &&
        timeout 600 mpirun --oversubscribe -np "$np" -x LOOM_PROGRESS_THREAD=on ./tests/mpi/test_mpi_collectives \
            >>tsan-mpi.log 2>&1 &&
        timeout 600 mpirun --oversubscribe -np "$np" -x LOOM_PROGRESS_THREAD=on ./tests/mpi/test_comm_lifecycle_libloom \
            -l 20 -t 300 >>tsan-mpi.log 2>&1 &&
        timeout 600 mpirun --oversubscribe -np "$np" -x LOOM_PROGRESS_THREAD=on ./tests/mpi/test_component_linked \
            >>tsan-mpi.log 2>&1; then
        echo "PASS: tsan MPI tests np=$np with the progress thread on"
    else
        echo "FAIL: tsan MPI tests np=$np"
        grep -A30 "WARNING: ThreadSanitizer" tsan-mpi.log | head -60
        tail -5 tsan-mpi.log
        status=1
    fi
done
echo "tsan check took $(( $(date +%s) - start )) s"
exit $status
