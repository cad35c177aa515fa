#!/bin/sh
# The cost model's two ways against each other on random machines of up to
# 1024 ranks: loom-plan --check prices every algorithm by one node standing
# for all and by every rank, and this prints each shape's largest
# difference where both answer, then the largest over all.
# usage: sh perf/plan-agreement.sh BUILD_DIR [SHAPES] [SEED]
set -eu
b=${1:?usage: sh perf/plan-agreement.sh BUILD_DIR [SHAPES] [SEED]}
shapes=${2:-20}
seed=${3:-35}
awk -v n="$shapes" -v seed="$seed" 'BEGIN {
    srand(seed)
    split("allreduce reduce_scatter allgather alltoall", coll, " ")
    split("1KiB 64KiB 1MiB 16MiB", size, " ")
    while (made < n) {
        ppn = 1 + int(rand() * 8); nodes = 2 + int(rand() * 127); rails = 1 + int(rand() * 4)
        if (nodes * ppn > 1024) continue
        print nodes, ppn, rails, coll[1 + int(rand() * 4)], size[1 + int(rand() * 4)]; made++
    }
}' | while read -r nodes ppn rails c s; do
    out=$("$b/src/loom-plan" "nodes=$nodes ppn=$ppn rails=$rails" -c "$c" -m "$s:$s" --check)
    both=$(echo "$out" | grep -c "every rank .* us (" || true)
    worst=$(echo "$out" | sed -n 's/^check: the largest difference where both answer: //p')
    echo "nodes=$nodes ppn=$ppn rails=$rails $c $s: $both algorithms priced both ways, largest difference $worst"
done | tee /dev/stderr | awk '{ d = $NF; sub("%", "", d); if (d + 0 > worst) worst = d + 0; n += $6 }
    END { printf "all: %d comparisons, the largest difference %.2f%%\n", n, worst }'
