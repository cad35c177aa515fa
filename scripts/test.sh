#!/bin/sh
# The README's test command: install what is missing (Slurm included, so
# the Slurm tests run), configure, build and run the whole suite (unit
# tests, MPI integration tests, the cluster in a box) in build/. Prints a
# closing "N passed, N failed" line.
set -eu
cd "$(dirname "$0")/.."
start=$(date +%s)
sh scripts/install-deps.sh --slurm
[ -x configure ] || autoreconf -fi >/dev/null
mkdir -p build
cd build
[ -f Makefile ] || ../configure --quiet
make -j"$(nproc)" >/dev/null
# The benchmarks the main job builds: built here too, so they cannot rot.
make -j"$(nproc)" perf >/dev/null
rc=0
make -j"$(nproc)" check || rc=$?
for log in tests/unit/loom_unit_tests.log tests/mpi/run_mpi_tests.sh.log tests/mpi/run_pmpi_tests.sh.log \
    tests/mpi/run_component_tests.sh.log \
    tests/mpi/run_testbed_test.sh.log tests/mpi/run_slurm_test.sh.log cuda/loom-kernel-check.log; do
    [ -f "$log" ] && grep -E "^\[  (PASSED|FAILED)  \]|^test_mpi_.*failures$|^(PASS|FAIL|SKIP):" "$log" || true
done
# Count individual test cases: gtest's summary plus one per mpirun invocation.
unit_pass=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\{0,1\}.*/\1/p' tests/unit/loom_unit_tests.log 2>/dev/null || echo 0)
unit_fail=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) tests\{0,1\}, listed below.*/\1/p' tests/unit/loom_unit_tests.log 2>/dev/null || echo 0)
mpi_pass=$(grep -c " 0 failures$\|^PASS: " tests/mpi/run_mpi_tests.sh.log 2>/dev/null || true)
mpi_fail=$(grep -c "^FAIL: " tests/mpi/run_mpi_tests.sh.log 2>/dev/null || true)
# coll/loom and libloom-mpi: one PASS/FAIL line per mpirun (np x forced algorithms) and per tool check
comp_pass=$(cat tests/mpi/run_component_tests.sh.log tests/mpi/run_pmpi_tests.sh.log 2>/dev/null | grep -c "^PASS: " || true)
comp_fail=$(cat tests/mpi/run_component_tests.sh.log tests/mpi/run_pmpi_tests.sh.log 2>/dev/null | grep -c "^FAIL: " || true)
# The cluster-in-a-box tests (the testbed, Slurm on it): PASS lines, or
# SKIP with its reason where namespaces or Slurm are not available.
bed_pass=$(cat tests/mpi/run_testbed_test.sh.log tests/mpi/run_slurm_test.sh.log 2>/dev/null | grep -c "^PASS: " || true)
bed_fail=$(cat tests/mpi/run_testbed_test.sh.log tests/mpi/run_slurm_test.sh.log 2>/dev/null | grep -c "^FAIL: " || true)
total_pass=$(( ${unit_pass:-0} + ${mpi_pass:-0} + ${comp_pass:-0} + ${bed_pass:-0} ))
total_fail=$(( ${unit_fail:-0} + ${mpi_fail:-0} + ${comp_fail:-0} + ${bed_fail:-0} ))
[ "$rc" -ne 0 ] && [ "$total_fail" -eq 0 ] && total_fail=1
# Each failure again, with what its log printed after it, last: where only
# the tail of the output is kept (CI), the failures are still in it.
if [ "$total_fail" -ne 0 ]; then
    for trs in tests/unit/*.trs tests/mpi/*.trs cuda/*.trs; do
        grep -q "^:test-result: FAIL" "$trs" 2>/dev/null || continue
        log=${trs%.trs}.log
        echo "== failures in $log"
        if grep -q -E "^FAIL: |^\[  FAILED  \]" "$log"; then
            grep -A 12 -E "^FAIL: |^\[  FAILED  \]" "$log" | head -60
        else
            tail -30 "$log"
        fi
    done
fi
echo "suite took $(( $(date +%s) - start )) s"
echo "$total_pass passed, $total_fail failed"
exit $rc
