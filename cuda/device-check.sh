#!/bin/sh
# The GPU check, for a machine with a GPU and CUDA but no MPI and no package
# registry: builds cuda/loom-kernel-check and cuda/loom-ipc-check from this
# tree with nvcc and runs them. Prints the device, every kernel against the
# CPU (bit for bit, two and three sources), a table of float and bf16 SUM at
# 256 MiB against cudaMemcpy device to device and pinned host <-> device
# copies, then the CUDA IPC allreduce (one-shot and reduce-scatter +
# allgather, libloom's kernels) among 2 and 4 forked processes, checked
# against the host sum and timed, and the staging round trip, plain and in
# pipelined 4 MiB chunks. A few minutes at most.
#   sh cuda/device-check.sh [--mib N]     (the kernel check's buffer)
# NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc) and
# NVCC_ARCH_FLAGS (default: this GPU's own, from nvidia-smi) may be set.
# Exit: 0 right, 1 a kernel wrong or a build failure, 77 no GPU.
# libloom's own orchestration of these (handles over host memory, the peer
# cache, the staging pipeline under MPI) is checked on CPU machines over the
# stand-in driver (tests/mpi/run_device_tests.sh); this script checks what
# only a GPU can: the kernels, CUDA IPC itself and the copy engines.
set -eu
cd "$(dirname "$0")"
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || { echo "SKIP: nvcc not found (set NVCC)"; exit 77; }
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu: /'
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
else
    cap=""
fi
arch=${NVCC_ARCH_FLAGS:-${cap:+-gencode arch=compute_$cap,code=sm_$cap}}
arch=${arch:--gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=compute_80}
out=${TMPDIR:-/tmp}/loom-kernel-check.$$
ipc=${TMPDIR:-/tmp}/loom-ipc-check.$$
trap 'rm -f "$out" "$ipc"' EXIT
start=$(date +%s)
# shellcheck disable=SC2086
{ "$nvcc" -std=c++17 -O3 $arch -I../src -o "$out" kernel_check.cu reduce_kernels.cu &&
  "$nvcc" -std=c++17 -O3 $arch -I../src -o "$ipc" ipc_check.cu reduce_kernels.cu; } ||
    { echo "FAIL: nvcc could not build the checks ($("$nvcc" --version | tail -1))"; exit 1; }
echo "built with $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/CUDA \1/p') ($arch) in $(( $(date +%s) - start )) s"
rc=0
"$out" "$@" || rc=$?
if [ $rc -eq 0 ]; then
    for ranks in 2 4; do
        echo
        "$ipc" --ranks $ranks || { rc=$?; break; }
    done
fi
echo "device-check: exit $rc in $(( $(date +%s) - start )) s"
exit $rc
