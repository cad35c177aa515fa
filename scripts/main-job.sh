#!/bin/sh
# The README's main job on one machine: install what is missing, build, and
# run Loom against Open MPI's built-in collectives at 4 ranks (OSU-style
# tables, alternating repetitions, medians, load average, results validated).
# With Open MPI's devel headers it measures coll/loom inside Open MPI against
# Open MPI's default modules (perf/coll_compare); without them, the libloom
# C API against MPI's collectives (perf/loom_vs_mpi). Extra arguments go to
# that program (e.g. -m 65536 -c allreduce).
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
if [ -f coll/component-path/mca_coll_loom.so ]; then
    ompi_dir=$(pkg-config --variable=libdir ompi-c)/openmpi3
    [ -d "$ompi_dir" ] || ompi_dir=$(pkg-config --variable=libdir ompi-c)/openmpi
    # Two ranks per core, bound: the same placement every run (unbound, the
    # scheduler's placement changes from job to job and with it the timings).
    exec mpirun --oversubscribe --bind-to core:overload-allowed -np "$np" --mca btl self,vader --mca mpi_yield_when_idle 1 \
        --mca mca_base_component_path "$PWD/coll/component-path:$ompi_dir" --mca coll_loom_priority 100 \
        perf/coll_compare "$@"
fi
exec mpirun --oversubscribe --bind-to core:overload-allowed -np "$np" --mca btl self,vader --mca mpi_yield_when_idle 1 \
    perf/loom_vs_mpi "$@"
