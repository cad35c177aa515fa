#!/bin/sh
# What the testbed itself carries in the pattern of a ring: node i sends to
# node i+1 on every rail at once, one stream per rail and node, so every
# rail of every node sends and receives at once, as a ring collective's
# steady state does. Prints each stream's rate, the sum and its share of
# the shaped rates, and the CPU's idle share during the run (/proc/stat):
# the ceiling to print beside a collective's figures, measured in the
# same session.
#
#   ceiling.sh [iperf3|ucx] [SECONDS] [BUSY]   (default: iperf3, 8 s, 0)
#
# BUSY: that many processes spin on the CPU during the run (one per rank
# computing, as an overlap benchmark's compute phase): what the streams
# carry when the cores are taken, the ceiling for overlap.
# iperf3: one TCP stream per rail and node (-B the rail's address).
# ucx: ucx_perftest -t tag_bw over UCX's tcp transport on that rail, as
# Loom's rails use it (4 MiB messages).
# Needs a testbed that is up (testbed.sh up N R RATE) and iperf3 or
# ucx_perftest (Debian: iperf3, ucx-utils).
set -eu
tool=${1:-iperf3}
secs=${2:-8}
busy=${3:-0}
case "$busy" in *[!0-9]*|'') echo "ceiling: BUSY is a count of processes, not '$busy'" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
name=${LOOM_TESTBED_NAME:-loom}
state=/run/$name-testbed
[ -f "$state/nodes" ] || { echo "ceiling: no testbed is up (testbed.sh up N R RATE first)" >&2; exit 1; }
n=$(cat "$state/nodes")
r=$(cat "$state/rails")
[ "$n" -ge 2 ] || { echo "ceiling: needs at least 2 nodes" >&2; exit 1; }
case "$tool" in
    iperf3) command -v iperf3 >/dev/null || { echo "ceiling: iperf3 is not installed (apt-get install iperf3)" >&2; exit 1; } ;;
    ucx) command -v ucx_perftest >/dev/null || { echo "ceiling: ucx_perftest is not installed (apt-get install ucx-utils)" >&2; exit 1; } ;;
    *) echo "ceiling: the tool is iperf3 or ucx, not '$tool'" >&2; exit 2 ;;
esac
tb() { sh "$here/testbed.sh" "$@"; }
out=$(mktemp -d)
spinners="" clients=""
trap 'for p in $spinners; do kill "$p" 2>/dev/null || true; done; tb kill-nodes >/dev/null 2>&1 || true; rm -rf "$out"' EXIT

cpu() { awk '/^cpu / {print $2 + $3 + $4 + $5 + $6 + $7 + $8, $5}' /proc/stat; }

# Servers: on every node, one per rail (port 5200 + rail for iperf3, 13337 + rail for ucx).
i=0
while [ "$i" -lt "$n" ]; do
    k=0
    while [ "$k" -lt "$r" ]; do
        addr=10.78.$k.$((i + 1))
        if [ "$tool" = iperf3 ]; then
            tb exec "$i" iperf3 -s -1 -B "$addr" -p $((5200 + k)) >/dev/null 2>&1 &
        else
            tb exec "$i" env UCX_TLS=tcp UCX_NET_DEVICES="rail$k" \
                ucx_perftest -p $((13337 + k)) -t tag_bw >/dev/null 2>&1 &
        fi
        k=$((k + 1))
    done
    i=$((i + 1))
done
sleep 1
j=0
while [ "$j" -lt "$busy" ]; do
    sh -c 'while :; do :; done' &
    spinners="$spinners $!"
    j=$((j + 1))
done
before=$(cpu)
# Clients: node i to node i+1 on every rail at once.
i=0
while [ "$i" -lt "$n" ]; do
    to=$(((i + 1) % n))
    k=0
    while [ "$k" -lt "$r" ]; do
        src=10.78.$k.$((i + 1)) dst=10.78.$k.$((to + 1))
        if [ "$tool" = iperf3 ]; then
            tb exec "$i" iperf3 -c "$dst" -B "$src" -p $((5200 + k)) -t "$secs" -f m \
                >"$out/n$i-rail$k" 2>&1 &
            clients="$clients $!"
        else
            # -n so that the run lasts about SECONDS at the shaped rate.
            rate=$(cat "$state/rate$k" 2>/dev/null || cat "$state/rate0")
            mbit=$(echo "$rate" | sed 's/mbit//')
            iters=$(awk -v m="$mbit" -v s="$secs" 'BEGIN { n = int(m * 1e6 / 8 * s / 4194304); print n < 4 ? 4 : n }')
            tb exec "$i" env UCX_TLS=tcp UCX_NET_DEVICES="rail$k" \
                ucx_perftest "$dst" -p $((13337 + k)) -t tag_bw -s 4194304 -n "$iters" -f \
                >"$out/n$i-rail$k" 2>&1 &
            clients="$clients $!"
        fi
        k=$((k + 1))
    done
    i=$((i + 1))
done
wait $clients
after=$(cpu)
for p in $spinners; do kill "$p" 2>/dev/null || true; done
spinners=""
wait
idle=$(echo "$before $after" | awk '{ t = $3 - $1; printf "%.0f", (t > 0 ? 100 * ($4 - $2) / t : 0) }')

total=0 shaped=0
i=0
echo "ceiling: $tool, $n nodes x $r rails, node i -> node i+1 on every rail at once, $secs s$([ "$busy" -gt 0 ] && echo ", $busy processes spinning")"
while [ "$i" -lt "$n" ]; do
    k=0
    while [ "$k" -lt "$r" ]; do
        f=$out/n$i-rail$k
        if [ "$tool" = iperf3 ]; then
            got=$(awk '/receiver/ {print $(NF-2)}' "$f" | tail -1)
        else
            # ucx_perftest -f: the last row of numbers; its overall bandwidth (MB/s of 2^20 B) is third from the end.
            got=$(awk 'NF >= 8 && $1 ~ /^[0-9]+$/ {bw = $(NF - 2)} END {printf "%.1f", bw * 1048576 * 8 / 1e6}' "$f")
        fi
        got=${got:-0}
        rate=$(cat "$state/rate$k" 2>/dev/null || cat "$state/rate0")
        mbit=$(echo "$rate" | sed 's/mbit//')
        echo "$i $to $k $got $mbit" | awk '{ printf "  n%d -> n%d rail%d: %7.1f Mbit/s of %d (%.0f %%)\n", $1, ($1 + 1) % '"$n"', $3, $4, $5, 100 * $4 / $5 }'
        total=$(awk -v a="$total" -v b="$got" 'BEGIN { print a + b }')
        shaped=$((shaped + mbit))
        k=$((k + 1))
    done
    i=$((i + 1))
done
awk -v t="$total" -v s="$shaped" -v idle="$idle" \
    'BEGIN { printf "ceiling: %.0f Mbit/s of %d shaped (%.0f %%); CPU idle %s %% during the run\n", t, s, 100 * t / s, idle }'
