#!/bin/sh
# libloom against a second MPI: configures and builds it in build-mpich/
# with Debian's MPICH (--with-mpi=/usr/bin/mpicc.mpich; Open MPI stays the
# default mpicc), then runs the C API's MPI tests (tests/mpi/run_mpi_tests.sh,
# those whose outcome can depend on the MPI) under MPICH's mpiexec. coll/loom
# is Open MPI's and is not built here.
# Skips (77) with the reason where MPICH is not installed
# (sh scripts/install-deps.sh --mpich). Run by CI after the test suite.
set -eu
cd "$(dirname "$0")/.."
wrapper=${MPICH_CC:-/usr/bin/mpicc.mpich}
launcher=$(dirname "$wrapper")/$(basename "$wrapper" | sed 's/^mpicc/mpiexec/')
if [ ! -x "$wrapper" ] || [ ! -x "$launcher" ]; then
    echo "SKIP: MPICH's $wrapper and $launcher not found (sh scripts/install-deps.sh --mpich)"
    exit 77
fi
start=$(date +%s)
[ -x configure ] || autoreconf -fi >/dev/null
mkdir -p build-mpich
cd build-mpich
[ -f Makefile ] || ../configure --quiet --with-mpi="$wrapper" --without-cuda
grep -q "^MPIEXEC = $launcher$" Makefile || { echo "FAIL: configure did not pick $launcher"; exit 1; }
# The Fortran test, where configure found MPICH's Fortran wrapper.
fortran=
grep -q "^MPIFORT = ." Makefile && fortran=tests/mpi/test_fortran
# -O1: what is checked is correctness under MPICH, at half the compile time.
make -j"$(nproc)" "LOOM_OPT_FLAGS=-O1 -g" src/libloom.la src/loom-info perf/loom-bench \
    tests/mpi/test_mpi_collectives tests/mpi/test_mpi_errors tests/mpi/test_progress_thread \
    tests/mpi/test_comm_lifecycle_libloom tests/mpi/test_hang_report tests/mpi/test_mismatch tests/mpi/test_reproducible tests/mpi/test_adapt \
    perf/loom-soak \
    pmpi/libloom-mpi.la tests/mpi/test_component tests/mpi/test_component_linked tests/mpi/test_comm_lifecycle \
    tests/mpi/bad_input tests/mpi/test_large_count $fortran >/dev/null
# Linked against MPICH, not Open MPI.
if ! ldd src/.libs/libloom.so | grep -q libmpich || ldd src/.libs/libloom.so | grep -q libmpi.so; then
    echo "FAIL: libloom is not linked against MPICH alone:"; ldd src/.libs/libloom.so | grep -i mpi
    exit 1
fi
echo "mpich-check: libloom built against $("$launcher" --version | sed -n 's/^ *Version: *//p' | head -1) in $(( $(date +%s) - start )) s"
rc=0
# The runs that can depend on the MPI beneath (LOOM_TESTS_MPI_ONLY): the
# others exercise Loom alone and run in the suite under Open MPI.
LOOM_TESTS_MPI_ONLY=1 MPIEXEC=$launcher top_builddir=. sh ../tests/mpi/run_mpi_tests.sh >run_mpi_tests.log 2>&1 || rc=$?
MPIEXEC=$launcher top_builddir=. sh ../tests/mpi/run_pmpi_tests.sh >run_pmpi_tests.log 2>&1 || rc=$?
grep -hE "^test_mpi_.*failures$|^(PASS|FAIL|SKIP):" run_mpi_tests.log run_pmpi_tests.log || true
pass=$(cat run_mpi_tests.log run_pmpi_tests.log | grep -c " 0 failures$\|^PASS: " || true)
fail=$(cat run_mpi_tests.log run_pmpi_tests.log | grep -c "^FAIL: " || true)
[ "$rc" -ne 0 ] && [ "$fail" -eq 0 ] && fail=1
echo "mpich-check: $pass passed, $fail failed under $launcher in $(( $(date +%s) - start )) s (logs: build-mpich/run_mpi_tests.log, build-mpich/run_pmpi_tests.log)"
exit $rc
