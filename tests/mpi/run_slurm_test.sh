#!/bin/sh
# Slurm on the cluster in a box, end to end: 2 emulated nodes, munged,
# slurmctld and two slurmds (perf/testbed/slurm.sh), then
#  - an `srun -K1 --mpi=pmix` job: loom-info's node map against Slurm's own
#    placement (cyclic, so ranks 0 and 2 share a node), then a validated
#    allreduce through coll/loom;
#  - `sbatch --wait` of each example batch script on 2 nodes: the srun and
#    mpirun allreduces (every size validated, coll/loom's stats in the
#    output) and a short training step (every gradient checked, a CSV).
# Torn down on every exit. Skips (77) with the reason where namespaces,
# Slurm's packages or its daemons are not available.
set -u
build=${top_builddir:-.}
here="$(cd "$(dirname "$0")" && pwd)"
testbed="$here/../../perf/testbed/testbed.sh"
examples="$here/../../examples/slurm"
export LOOM_TESTBED_NAME=${LOOM_SLURM_TESTBED:-loomslurm} LOOM_BUILD="$(cd "$build" && pwd)"
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: the Slurm testbed needs root (network namespaces, the daemons)"
    exit 77
fi
for c in munged mungekey slurmctld slurmd sbatch srun; do
    command -v "$c" >/dev/null 2>&1 ||
        { echo "SKIP: $c not found (Slurm and munge: sh scripts/install-deps.sh --slurm)"; exit 77; }
done
if ! ip netns add "$LOOM_TESTBED_NAME-probe" 2>/dev/null; then
    echo "SKIP: network namespaces are not permitted here (ip netns add failed)"
    exit 77
fi
ip netns delete "$LOOM_TESTBED_NAME-probe"
[ -f "$build/coll/.libs/mca_coll_loom.so" ] || { echo "SKIP: coll/loom was not built"; exit 77; }
trap 'sh "$testbed" down >/dev/null 2>&1' EXIT INT TERM
sh "$testbed" up 2 1 1000mbit >/dev/null || { echo "FAIL: testbed up"; exit 1; }
if ! up=$(sh "$testbed" slurm-up 2>&1); then
    echo "SKIP: the Slurm daemons did not start here: $up"
    tail -3 /run/$LOOM_TESTBED_NAME-testbed/slurm/*.log 2>/dev/null
    exit 77
fi
echo "$up"
ompi_dir=$(pkg-config --variable=libdir ompi-c 2>/dev/null)/openmpi3
[ -d "$ompi_dir" ] || ompi_dir=$(pkg-config --variable=libdir ompi-c 2>/dev/null)/openmpi
# MCA parameters through the environment, as a Slurm user sets them.
export OMPI_MCA_mca_base_component_path="$LOOM_BUILD/coll/component-path:$ompi_dir"
export OMPI_MCA_coll_loom_priority=100 OMPI_MCA_coll_loom_stats=1
status=0

# Slurm's placement and Loom's node map, rank by rank: the same host, and
# ranks on one Slurm node share one Loom node.
slurm_map=$(timeout 60 sh "$testbed" slurm srun -K1 --mpi=none -N2 -n4 --distribution=cyclic \
    sh -c 'echo "rank $SLURM_PROCID: host $SLURMD_NODENAME, node $SLURM_NODEID"' 2>&1 | sort)
loom_map=$(timeout 60 sh "$testbed" slurm srun -K1 --mpi=pmix -N2 -n4 --distribution=cyclic \
    "$LOOM_BUILD/src/loom-info" --topology 2>&1 | sed -n 's/^  \(rank [0-9]*: host [^,]*\), node \([0-9]*\) of.*/\1, node \2/p' | sort)
if [ -n "$slurm_map" ] && [ "$slurm_map" = "$loom_map" ] && echo "$loom_map" | grep -q "rank 2: host n0, node 0"; then
    echo "PASS: srun -K1 --mpi=pmix: Loom's node map matches Slurm's placement (cyclic: $(echo "$loom_map" | tr '\n' ';'))"
else
    echo "FAIL: Loom's node map differs from Slurm's placement"
    echo "Slurm:"; echo "$slurm_map"; echo "Loom:"; echo "$loom_map"
    status=1
fi
out=$(timeout 120 sh "$testbed" slurm srun -K1 --mpi=pmix -N2 -n4 --distribution=cyclic \
    "$LOOM_BUILD/perf/loom-bench" allreduce -m 8:262144 -i 5 -x 1 -c 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$(echo "$out" | grep -c ' Pass$')" -eq 16 ] &&
    echo "$out" | grep -Eq "^  allreduce +[1-9][0-9]* +[0-9]+ +0 " &&
    echo "$out" | grep -q "shared_memory among 2 ranks of this node"; then
    echo "PASS: srun -K1 --mpi=pmix: 16 validated allreduces across 2 nodes, handled by coll/loom"
else
    echo "FAIL: srun -K1 --mpi=pmix loom-bench allreduce -c (exit $rc)"
    echo "$out" | tail -30
    status=1
fi

# The example batch scripts, on 2 nodes x 2 ranks; their output goes to
# the folder they were submitted from (the nodes' /tmp is their own: submit
# from the build tree).
jobdir="$LOOM_BUILD/tests/mpi/slurm-jobs"
rm -rf "$jobdir" && mkdir -p "$jobdir"
# batch SCRIPT OUTPUT_PREFIX ARGS...: submits examples/slurm/SCRIPT with
# --wait; sets $log to the job's output file, $job and $rc.
batch() {
    batch_script=$1 batch_prefix=$2  # sh has no locals: names of their own
    shift 2
    sub=$(cd "$jobdir" && LOOM_BENCH="$LOOM_BUILD/perf/loom-bench" LOOM_TRAIN_STEP="$LOOM_BUILD/examples/loom-train-step" \
        timeout 240 sh "$testbed" slurm sbatch --wait -N2 --ntasks-per-node=2 "$examples/$batch_script" "$@" 2>&1)
    rc=$?
    job=$(echo "$sub" | sed -n 's/^Submitted batch job \([0-9]*\)/\1/p')
    log="$jobdir/$batch_prefix-$job.out"
}
for script in allreduce-srun:loom-allreduce allreduce-mpirun:loom-allreduce-mpirun; do
    batch "${script%%:*}.sbatch" "${script#*:}" -m 8:262144 -i 5 -x 1
    if [ $rc -eq 0 ] && [ -f "$log" ] && [ "$(grep -c ' Pass$' "$log")" -eq 16 ] &&
        grep -Eq "^  allreduce +[1-9][0-9]* +[0-9]+ +0 " "$log" && grep -q "this output goes to $log" "$log"; then
        echo "PASS: sbatch --wait examples/slurm/${script%%:*}.sbatch: job $job, 16 validated allreduces through coll/loom ($log)"
    else
        echo "FAIL: sbatch --wait examples/slurm/${script%%:*}.sbatch (exit $rc): $sub"
        [ -f "$log" ] && tail -30 "$log"
        tail -5 /run/$LOOM_TESTBED_NAME-testbed/slurm/slurmd-n0.log 2>/dev/null
        status=1
    fi
done
batch train-step.sbatch loom-train-step --layers 4 --layer-mib 0.25 --bucket-mib 0.5 --compute-ms 1 --steps 2 --warmup 1
if [ $rc -eq 0 ] && [ -f "$log" ] && grep -q "^# check: 0 wrong gradients" "$log" &&
    [ "$(grep -c '^"' "${log%.out}.csv" 2>/dev/null)" -eq 6 ]; then
    echo "PASS: sbatch --wait examples/slurm/train-step.sbatch: job $job, every gradient right, 6 modes in ${log%.out}.csv"
else
    echo "FAIL: sbatch --wait examples/slurm/train-step.sbatch (exit $rc): $sub"
    [ -f "$log" ] && tail -20 "$log"
    status=1
fi
exit $status
