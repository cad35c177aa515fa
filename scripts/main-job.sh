#!/bin/sh
# The README's main job on one machine: install what is missing, build, and
# run Loom against Open MPI's built-in collectives at 4 ranks (OSU-style
# table, interleaved, medians, load average). Extra arguments go to
# loom_vs_mpi (e.g. -m 65536 -c allreduce).
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
[ -x configure ] || autoreconf -fi >/dev/null
mkdir -p build
cd build
[ -f Makefile ] || ../configure --quiet
make -j"$(nproc)" >/dev/null
make perf >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec mpirun --oversubscribe -np "${LOOM_NP:-4}" --mca btl self,vader --mca mpi_yield_when_idle 1 \
    perf/loom_vs_mpi "$@"
