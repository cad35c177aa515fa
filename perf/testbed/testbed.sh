#!/bin/sh
# Cluster in a box: N emulated nodes (network namespaces, each with its own
# hostname, /tmp and sysfs), R rails per node (one veth per rail to one
# bridge per rail, one subnet per rail, shaped with tbf), and an unshaped
# management network for launch traffic. The bridges live in a separate
# "switch" namespace, so nothing is routed to the root namespace.
#
#   testbed.sh up N R [RATE]   (RATE for tbf, default 200mbit; "200mbit,100mbit" gives
#                               rail k the k-th rate, the last repeating; idempotent: re-creates)
#   testbed.sh rail-down NODE RAIL / rail-up NODE RAIL   (both ends of one rail link down / up)
#   testbed.sh down            (removes all it created, also after a crash)
#   testbed.sh kill-nodes      (kills every process in the nodes; they stay up)
#   testbed.sh run [mpirun args...]   (mpirun from node 0 across all nodes)
#   testbed.sh exec NODE cmd...       (a command inside one node)
#   testbed.sh check           (per-rail bandwidth vs the shaping; ranks grouped by node)
#   testbed.sh slurm-up / slurm-down / slurm CMD...   (Slurm on the nodes: slurm.sh)
# Root only. See perf/testbed/README.md.
set -eu
# LOOM_TESTBED_NAME keeps several testbeds apart (the tests use their own).
name=${LOOM_TESTBED_NAME:-loom}
state=/run/$name-testbed
sw=$name-sw

repo=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "testbed: $*" >&2; exit 1; }
nodes() { cat "$state/nodes" 2>/dev/null || echo 0; }
rails() { cat "$state/rails" 2>/dev/null || echo 0; }

testbed_namespaces() { ip netns list 2>/dev/null | awk -v p="$name-" 'index($1, p) == 1 {print $1}'; }

# Kills every process left in the testbed's namespaces (a daemon, a job's
# tasks, an orted of a crashed run), which would keep them alive.
kill_in_nodes() {
    for ns in $(testbed_namespaces); do
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
    done
}

down() {
    [ ! -d "$state/slurm" ] || sh "$(dirname "$0")/slurm.sh" down >/dev/null 2>&1 || true
    kill_in_nodes
    for ns in $(testbed_namespaces); do
        ip netns delete "$ns" 2>/dev/null || true
    done
    if [ -d "$state" ]; then
        for f in "$state"/*.uts; do
            [ -e "$f" ] || continue
            umount "$f" 2>/dev/null || true
        done
        rm -rf "$state"
    fi
}

up() {
    n=$1 r=$2 rate=${3:-200mbit}
    [ "$n" -ge 1 ] && [ "$n" -le 32 ] || die "N must be 1..32"
    [ "$r" -ge 1 ] && [ "$r" -le 4 ] || die "R must be 1..4"
    down
    mkdir -p "$state"
    echo "$n" >"$state/nodes"
    echo "$r" >"$state/rails"
    echo "$rate" >"$state/rate"
    # The rails' subnets, for the BTL (run) and for Slurm's jobs (slurm.sh).
    k=1 subnets="10.78.0.0/24"
    while [ "$k" -lt "$r" ]; do
        subnets="$subnets,10.78.$k.0/24"
        k=$((k + 1))
    done
    echo "$subnets" >"$state/subnets"
    # Rail k's rate: the k-th of a comma list, the last one repeating.
    k=0
    while [ "$k" -lt "$r" ]; do
        rate_k=$(echo "$rate" | awk -F, -v k="$k" '{ print (k < NF) ? $(k + 1) : $NF }')
        echo "$rate_k" >"$state/rate$k"
        k=$((k + 1))
    done
    ip netns add "$sw"
    ip -n "$sw" link set lo up
    ip -n "$sw" link add br-mgmt type bridge
    ip -n "$sw" link set br-mgmt up
    k=0
    while [ "$k" -lt "$r" ]; do
        ip -n "$sw" link add "br-rail$k" type bridge
        ip -n "$sw" link set "br-rail$k" up
        k=$((k + 1))
    done
    : >"$state/hosts"
    echo "127.0.0.1 localhost" >>"$state/hosts"
    i=0
    while [ "$i" -lt "$n" ]; do
        node="$name-n$i"
        ip netns add "$node"
        ip -n "$node" link set lo up
        # Management network: unshaped, 10.77.0.0/24.
        ip link add "m$i" netns "$node" type veth peer name "m$i-sw" netns "$sw"
        ip -n "$node" link set "m$i" name mgmt
        ip -n "$node" addr add "10.77.0.$((i + 1))/24" dev mgmt
        ip -n "$node" link set mgmt up
        ip -n "$sw" link set "m$i-sw" master br-mgmt up
        k=0
        while [ "$k" -lt "$r" ]; do
            ip link add "r$i-$k" netns "$node" type veth peer name "r$i-$k-sw" netns "$sw"
            ip -n "$node" link set "r$i-$k" name "rail$k"
            ip -n "$node" addr add "10.78.$k.$((i + 1))/24" dev "rail$k"
            ip -n "$node" link set "rail$k" up
            ip -n "$sw" link set "r$i-$k-sw" master "br-rail$k" up
            ip netns exec "$node" tc qdisc replace dev "rail$k" root tbf rate "$(cat "$state/rate$k")" burst 256kb latency 20ms
            ip netns exec "$sw" tc qdisc replace dev "r$i-$k-sw" root tbf rate "$(cat "$state/rate$k")" burst 256kb latency 20ms
            k=$((k + 1))
        done
        # Its own hostname, in a UTS namespace kept alive by a bind mount.
        touch "$state/n$i.uts"
        unshare --uts="$state/n$i.uts" hostname "n$i"
        echo "10.77.0.$((i + 1)) n$i" >>"$state/hosts"
        mkdir -p "$state/tmp-n$i"
        i=$((i + 1))
    done
    : >"$state/hostfile"
    i=0
    while [ "$i" -lt "$n" ]; do
        echo "n$i slots=8" >>"$state/hostfile"
        i=$((i + 1))
    done
    echo "testbed: $n nodes x $r rails at $rate up (state in $state)"
}

# rail_link NODE RAIL up|down: both ends of one rail's veth, as a cable
# pulled or put back; addresses and shaping stay.
rail_link() {
    [ $# -eq 3 ] || die "usage: testbed.sh rail-down|rail-up NODE RAIL"
    i=$1 k=$2
    [ -e "$state/n$i.uts" ] || die "node n$i is not up"
    [ "$k" -ge 0 ] && [ "$k" -lt "$(rails)" ] || die "rail $k: the testbed has rails 0..$(($(rails) - 1))"
    ip -n "$name-n$i" link set "rail$k" "$3"
    ip -n "$sw" link set "r$i-$k-sw" "$3"
    echo "testbed: rail$k of n$i $3 at $(date +%H:%M:%S.%N | cut -c1-12)"
}

# Runs "$@" inside node $1: its network and hostname, its own /tmp, sysfs
# remounted (so hwloc sees its interfaces) with the host's cgroup mounts
# kept (slurmd needs them), the testbed's hosts file.
in_node() {
    i=$1
    shift
    [ -e "$state/n$i.uts" ] || die "node n$i is not up"
    # The checkout (and a build elsewhere) stay visible when they live under
    # /tmp: they are bound into the node's own /tmp at the same paths.
    keep="$repo ${LOOM_BUILD:-}"
    exec nsenter --net="/run/netns/$name-n$i" --uts="$state/n$i.uts" \
        unshare --mount --propagation private sh -c '
            state=$1 i=$2 keep=$3; shift 3
            mkdir -p "$state/cgroup-n$i"
            mount --rbind /sys/fs/cgroup "$state/cgroup-n$i" 2>/dev/null || true
            if mount -t sysfs sysfs /sys 2>/dev/null; then
                mount --rbind "$state/cgroup-n$i" /sys/fs/cgroup 2>/dev/null || true
            fi
            for path in $keep; do
                case $path in /tmp/*) mkdir -p "$state/tmp-n$i${path#/tmp}" && mount --bind "$path" "$state/tmp-n$i${path#/tmp}" ;; esac
            done
            mount --rbind "$state/tmp-n$i" /tmp
            mount --bind "$state/hosts" /etc/hosts
            exec "$@"' sh "$state" "$i" "$keep" "$@"
}

run() {
    n=$(nodes)
    [ "$n" -ge 1 ] || die "the testbed is not up (testbed.sh up N R)"
    agent="$state/agent.sh"
    cat >"$agent" <<EOF
#!/bin/sh
# plm_rsh_agent: "agent.sh HOST command..." runs the command inside node HOST.
host=\$1; shift
LOOM_TESTBED_NAME=$name exec sh "$(cd "$(dirname "$0")" && pwd)/testbed.sh" exec "\${host#n}" sh -c "\$*"
EOF
    chmod +x "$agent"
    subnets=$(cat "$state/subnets")
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # Every rail unless the caller names its own (Open MPI refuses a parameter twice).
    case "$*" in *btl_tcp_if_include*) rails_arg="" ;; *) rails_arg="--mca btl_tcp_if_include $subnets" ;; esac
    # shellcheck disable=SC2086
    in_node 0 mpirun --hostfile "$state/hostfile" --mca plm_rsh_agent "$agent" \
        --mca oob_tcp_if_include 10.77.0.0/24 --mca btl tcp,self,vader $rails_arg \
        --mca mpi_yield_when_idle 1 --bind-to none -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM "$@"
}

# Measured checks: ranks are grouped by emulated node (Loom's own node map,
# from MPI_Comm_split_type across the nodes; a failure if not), and what
# each rail carries (a 1 MiB alltoall between two nodes restricted to it),
# printed beside the shaped rate.
check() {
    n=$(nodes)
    [ "$n" -ge 2 ] || die "check needs at least 2 nodes up"
    build=${LOOM_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}
    out=$(run -np $((2 * n)) --map-by node "$build/src/loom-info" --topology 2>&1)
    want="$n nodes:"
    if echo "$out" | grep -q "$want" && [ "$(echo "$out" | grep -c "host n0, node 0 of $n")" -eq 2 ]; then
        echo "check: ranks grouped by node: $(echo "$out" | head -1 | sed 's/.*): //')"
    else
        echo "check: FAILED: ranks are not grouped by node:"; echo "$out"; return 1
    fi
    k=0
    status=0
    while [ "$k" -lt "$(rails)" ]; do
        rate=$(cat "$state/rate$k")
        mbit=$(echo "$rate" | sed 's/mbit//')
        t=$(run -np 2 --map-by node --mca btl_tcp_if_include "10.78.$k.0/24" "$build/perf/loom-bench" alltoall \
            -m 1048576:1048576 -i 4 -x 1 2>&1 | awk '/^1048576/ {print $2}')
        got=$(awk -v t="$t" 'BEGIN { if (t > 0) printf "%.0f", 1048576 * 8 / t; else print 0 }')  # Mbit/s
        pct=$(awk -v g="$got" -v m="$mbit" 'BEGIN { printf "%.0f", 100 * g / m }')
        # A measurement, not a verdict: on 2 shared cores the CPU, not the
        # shaping, may set the rate. Far off is worth a warning.
        note=""
        [ "$pct" -ge 60 ] && [ "$pct" -le 115 ] || note=" (WARNING: far from the shaping; is the machine busy?)"
        echo "check: rail$k: $got Mbit/s per direction (shaped at $rate: $pct %)$note"
        k=$((k + 1))
    done
    return $status
}

case ${1:-} in
    up) shift; [ $# -ge 2 ] || die "usage: testbed.sh up N R [RATE]"; up "$@" ;;
    down) down; echo "testbed: down" ;;
    run) shift; run "$@" ;;
    exec) shift; in_node "$@" ;;
    check) check ;;
    rail-down) shift; rail_link "$@" down ;;
    rail-up) shift; rail_link "$@" up ;;
    slurm-up) shift; exec sh "$(dirname "$0")/slurm.sh" up "$@" ;;
    slurm-down) exec sh "$(dirname "$0")/slurm.sh" down ;;
    kill-nodes) kill_in_nodes ;;
    slurm) shift; exec sh "$(dirname "$0")/slurm.sh" run "$@" ;;
    *) sed -n '2,17p' "$0" >&2; exit 2 ;;
esac
