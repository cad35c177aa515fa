#!/bin/sh
# The README's main job on one machine: install what is missing, build, and
# run Loom against Open MPI's built-in collectives at 4 ranks. With Open
# MPI's devel headers: perf/loom-compare runs loom-bench (OSU format) under
# Open MPI's default modules and under coll/loom, interleaved, and prints
# median latencies and their ratios per collective with the load average,
# and plots them (build/main-job/<collective>.png). Extra arguments go to
# loom-compare (e.g. -c allreduce -m 8:65536 -r 5). Without the headers:
# perf/loom_vs_mpi, the libloom C API against MPI's collectives.
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
np=${LOOM_NP:-4}
# Two ranks per core, bound: the same placement every run (unbound, the
# scheduler's placement changes from job to job and with it the timings).
launcher="mpirun --oversubscribe --bind-to core:overload-allowed --mca btl self,vader --mca mpi_yield_when_idle 1"
if [ -f coll/component-path/mca_coll_loom.so ]; then
    ompi_dir=$(pkg-config --variable=libdir ompi-c)/openmpi3
    [ -d "$ompi_dir" ] || ompi_dir=$(pkg-config --variable=libdir ompi-c)/openmpi
    # loom-bench times Open MPI's default collectives and coll/loom in the
    # same process, in alternating windows of about 2 ms (--same-process):
    # this machine's speed drifts by a quarter within a second (an 8-byte
    # alltoall takes 3.4 or 4.4 us, both sides alike), and separate launches
    # of the two sides met it at different speeds: 30 interleaved launches
    # each put the 8-64 B alltoall ratio anywhere from 0.94 to 1.20. Medians
    # of 15 launches, ratio table and plots (build/main-job/*.png).
    LOOM_BENCH=$PWD/perf/loom-bench exec sh ../perf/loom-compare --same-process -n "$np" -r 15 -o main-job \
        --mpirun "$launcher --mca mca_base_component_path $PWD/coll/component-path:$ompi_dir" "$@"
fi
# Without Open MPI's devel headers: libloom's API against MPI's collectives.
exec $launcher -np "$np" perf/loom_vs_mpi "$@"
