#!/bin/sh
# Collectives on device buffers (tests/mpi/test_device_buffers.c) at 1..5
# ranks and 17, through libloom and through MPI_* with coll/loom loaded.
# Where the NVIDIA driver is installed, on its device memory; otherwise over
# the stand-in driver built from tests/fake_cuda (device memory the CPU
# cannot touch), which must then load. Skips (77) with the reason when
# neither exists or no launcher was found.
set -u
top=${top_builddir:-.}
dir=$top/tests/mpi
. "$(dirname "$0")/launcher.sh"
require=""
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    fake=$(cd "$top/tests/fake_cuda" 2>/dev/null && pwd)
    if [ -z "$fake" ] || [ ! -f "$fake/libcuda.so.1" ]; then
        echo "SKIP: no NVIDIA driver (libcuda.so.1) and no stand-in driver built (configure found no CUDA toolkit)"
        exit 77
    fi
    LD_LIBRARY_PATH=$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH
    require=--require-driver
    echo "device memory: the stand-in driver in $fake (no NVIDIA driver here)"
fi
env_arg() { if [ $hydra = yes ]; then printf ' -genv %s %s' "${1%%=*}" "${1#*=}"; else printf ' -x %s' "$1"; fi; }
status=0
run() {  # run NP TIMEOUT MODE [MCA...]; $quick and $force go to the program
    np=$1 limit=$2 mode=$3
    shift 3
    out=$(timeout "$limit" "$MPIEXEC" $oversubscribe -np "$np" $(env_arg LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}") \
        "$@" "$dir/test_device_buffers" "$mode" $require $quick $force 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "FAIL: test_device_buffers $mode on $np ranks (rc $rc)"
        echo "$out" | tail -20
        status=1
    else
        echo "$out" | grep -E '^(PASS|SKIP)'
    fi
}
force=""
for np in 1 2 3 4 5; do
    quick=""
    run $np 300 --api
done
quick=--quick
run 17 300 --api
# Both CUDA IPC allreduces at every size (the built-in rules split them at 64 KiB).
for algorithm in cuda_ipc_one_shot cuda_ipc_reduce_scatter_allgather; do
    force="--allreduce $algorithm"
    for np in 2 3 7; do run $np 300 --api; done
done
force=
# coll/loom: MPI_* calls on device buffers.
component_path=$(cd "$top/coll/component-path" 2>/dev/null && pwd)
if [ -n "$component_path" ] && [ $hydra = no ]; then
    ompi_dir=$(pkg-config --variable=libdir ompi-c 2>/dev/null)/openmpi3
    [ -d "$ompi_dir" ] || ompi_dir=$(pkg-config --variable=libdir ompi-c 2>/dev/null)/openmpi
    for np in 1 3 4; do
        quick=""
        run $np 300 --mpi --mca mca_base_component_path "$component_path:$ompi_dir" \
            --mca coll_loom_priority 100
    done
else
    echo "coll/loom runs skipped: no component built or not Open MPI's mpirun"
fi
exit $status
