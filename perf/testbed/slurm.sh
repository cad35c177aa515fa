#!/bin/sh
# Slurm on the cluster in a box: munged in the root namespace (its socket
# in the testbed's state folder), slurmctld in node n0, one slurmd per node,
# MpiDefault=pmix. Bring the testbed up first (testbed.sh up N R).
#
#   slurm.sh up        (idempotent: re-creates; waits until every node is idle)
#   slurm.sh down      (stops the daemons and their jobs; testbed.sh down does it too)
#   slurm.sh run CMD...   (a command inside n0 with SLURM_CONF set: sbatch, srun, sinfo, ...;
#                          the testbed's networks go to Open MPI as OMPI_MCA_* variables)
#
# Debian packages: slurmd slurmctld slurm-client munge libpmix-dev
# (sh scripts/install-deps.sh --slurm). Root only. See perf/testbed/README.md.
set -eu
name=${LOOM_TESTBED_NAME:-loom}
state=/run/$name-testbed
sl=$state/slurm
testbed="$(cd "$(dirname "$0")" && pwd)/testbed.sh"
export LOOM_TESTBED_NAME=$name
die() { echo "slurm: $*" >&2; exit 1; }

stop() {
    [ -d "$sl" ] || return 0
    for f in "$sl"/*.pid; do
        [ -e "$f" ] || continue
        kill "$(cat "$f")" 2>/dev/null || true
    done
    # slurmstepd and the tasks of a job that still runs live in the nodes'
    # namespaces, with the slurmds: kill what is left there.
    sleep 0.5
    sh "$testbed" kill-nodes
    [ ! -e "$sl/munged.pid" ] || kill -9 "$(cat "$sl/munged.pid")" 2>/dev/null || true
    rm -rf "$sl"
}

write_conf() {
    n=$1
    cat >"$sl/slurm.conf" <<CONF
# Written by perf/testbed/slurm.sh for the testbed "$name".
ClusterName=$name
SlurmctldHost=n0(10.77.0.1)
AuthType=auth/munge
AuthInfo=socket=$sl/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$sl/ctld
SlurmdSpoolDir=$sl/spool-%n
SlurmctldPidFile=$sl/slurmctld.pid
SlurmdPidFile=$sl/slurmd-%n.pid
SlurmctldLogFile=$sl/slurmctld.log
SlurmdLogFile=$sl/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=pmix
SlurmdParameters=config_overrides
ReturnToService=2
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
KillWait=5
MinJobAge=30
CONF
    i=0
    while [ "$i" -lt "$n" ]; do
        echo "NodeName=n$i NodeAddr=10.77.0.$((i + 1)) CPUs=2 State=UNKNOWN" >>"$sl/slurm.conf"
        i=$((i + 1))
    done
    echo "PartitionName=loom Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$sl/slurm.conf"
}

up() {
    [ "$(id -u)" = 0 ] || die "needs root (the daemons run in the testbed's namespaces)"
    n=$(cat "$state/nodes" 2>/dev/null || echo 0)
    [ "$n" -ge 1 ] || die "the testbed is not up (testbed.sh up N R)"
    for c in munged mungekey slurmctld slurmd sbatch srun sinfo; do
        command -v "$c" >/dev/null 2>&1 ||
            die "$c not found: install Slurm and munge (sh scripts/install-deps.sh --slurm)"
    done
    [ -e /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so ] || [ -n "$(find /usr/lib -name mpi_pmix.so 2>/dev/null | head -1)" ] ||
        die "Slurm's pmix plugin (mpi_pmix.so) not found"
    stop
    mkdir -p "$sl/ctld"
    chmod 700 "$sl"
    mungekey --create --keyfile="$sl/munge.key" >/dev/null
    munged --force --socket="$sl/munge.socket" --key-file="$sl/munge.key" --pid-file="$sl/munged.pid" \
        --log-file="$sl/munged.log" --seed-file="$sl/munged.seed" || die "munged did not start ($sl/munged.log)"
    write_conf "$n"
    sh "$testbed" exec 0 slurmctld -c -f "$sl/slurm.conf" || die "slurmctld did not start ($sl/slurmctld.log)"
    i=0
    while [ "$i" -lt "$n" ]; do
        mkdir -p "$sl/spool-n$i"
        sh "$testbed" exec "$i" slurmd -f "$sl/slurm.conf" || die "slurmd on n$i did not start ($sl/slurmd-n$i.log)"
        i=$((i + 1))
    done
    # Up when sinfo shows every node idle.
    tries=0
    while :; do
        idle=$(run sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)
        [ "$idle" -ge "$n" ] && break
        tries=$((tries + 1))
        [ "$tries" -lt 60 ] || { run sinfo -N 2>&1 | sed 's/^/slurm: /' >&2; die "not every node became idle within 30 s (logs in $sl)"; }
        sleep 0.5
    done
    echo "slurm: slurmctld on n0, slurmd on n0..n$((n - 1)), MpiDefault=pmix (SLURM_CONF=$sl/slurm.conf)"
}

# The testbed's network, as testbed.sh run passes it to mpirun, through the
# environment that sbatch and srun hand to the job (a value set by the
# caller wins): launch traffic on the management net, the BTL over the rails.
testbed_mca() {
    subnets=$(cat "$state/subnets")
    export OMPI_MCA_oob_tcp_if_include="${OMPI_MCA_oob_tcp_if_include:-10.77.0.0/24}"
    export OMPI_MCA_btl="${OMPI_MCA_btl:-tcp,self,vader}"
    export OMPI_MCA_btl_tcp_if_include="${OMPI_MCA_btl_tcp_if_include:-$subnets}"
    # 2 cores for every node's ranks: waits must yield (testbed.md).
    export OMPI_MCA_mpi_yield_when_idle="${OMPI_MCA_mpi_yield_when_idle:-1}"
    # The daemons run as root, and so do the jobs (mpirun refuses otherwise).
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}

run() {
    [ -e "$sl/slurm.conf" ] || die "Slurm is not up (testbed.sh slurm-up)"
    testbed_mca
    SLURM_CONF="$sl/slurm.conf" sh "$testbed" exec 0 "$@"
}

case ${1:-} in
    up) up ;;
    down) stop; echo "slurm: down" ;;
    run) shift; run "$@" ;;
    *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
