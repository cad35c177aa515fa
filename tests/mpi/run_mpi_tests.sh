#!/bin/sh
# Runs the MPI integration tests under mpirun at 1..5 ranks (more ranks than
# cores: --oversubscribe). Each run has a timeout so a hang fails instead of
# blocking the suite. Skips (exit 77) when no launcher was found.
set -u
MPIEXEC=${MPIEXEC:-mpirun}
# The test programs are built in the build tree, not beside this script.
dir=${top_builddir:-.}/tests/mpi
if ! command -v "$MPIEXEC" >/dev/null 2>&1; then
    echo "SKIP: no MPI launcher ($MPIEXEC) found"
    exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Keep Open MPI on shared memory and loopback; no stray network probing.
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_mpi_yield_when_idle=1
status=0
for np in 1 2 3 4 5; do
    for t in test_mpi_collectives test_mpi_errors; do
        if ! timeout 300 "$MPIEXEC" --oversubscribe -np "$np" "$dir/$t"; then
            echo "FAIL: $t at np=$np"
            status=1
        fi
    done
done
exit $status
