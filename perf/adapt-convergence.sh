#!/bin/sh
# Parameter adapt started from a deliberately bad rules file: per repetition,
# interleaved, loom-bench (libloom API) runs
#   bad:    the rules file's algorithm, adapt off;
#   adapt:  the same rules file with adapt on, timed after WARM calls (the
#           learning rounds: 4 per candidate, 4 candidates);
#   each candidate adapt timed, forced.
# Prints each run's mean per call, then the medians over repetitions: adapt
# against the best forced candidate (how close it came) and against the one
# it chose (what exploring costs in the steady state), with the load average.
set -eu
usage() {
    cat <<'EOF'
usage: adapt-convergence.sh [options]
  -c COLLECTIVE  allreduce (default), reduce_scatter_block, allgather or alltoall
  -m BYTES       message size (default 1048576)
  -n NP          ranks (default 4)
  -r REPS        interleaved repetitions (default 3)
  -i ITERS       timed calls per run (default 400)
  -w WARM        calls before the timed ones (default 16: the learning rounds)
  --bad ALGO     the rules file's algorithm (default direct)
  --mpirun CMD   launcher and its arguments (default: mpirun --oversubscribe -x LD_LIBRARY_PATH)
  -b ARGS        extra loom-bench arguments
EOF
}
here=$(cd "$(dirname "$0")" && pwd)
bench=${LOOM_BENCH:-$here/loom-bench}
coll=allreduce size=1048576 np=4 reps=3 iters=400 warm=16 bad=direct extra=""
mpirun_cmd="mpirun --oversubscribe -x LD_LIBRARY_PATH"
while [ $# -gt 0 ]; do
    case $1 in
        -c) coll=$2; shift 2 ;;
        -m) size=$2; shift 2 ;;
        -n) np=$2; shift 2 ;;
        -r) reps=$2; shift 2 ;;
        -i) iters=$2; shift 2 ;;
        -w) warm=$2; shift 2 ;;
        --bad) bad=$2; shift 2 ;;
        --mpirun) mpirun_cmd=$2; shift 2 ;;
        -b) extra=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "adapt-convergence: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
out=$(mktemp -d)
# Where every node can read it: the testbed's nodes have their own /tmp.
rules=${ADAPT_RULES_DIR:-$PWD}/adapt-convergence-rules.json
trap 'rm -rf "$out" "$rules"' EXIT
printf '{"rules": [{"collective": "%s", "bytes": [%s, %s], "algorithm": "%s", "note": "deliberately bad"}]}\n' \
    "$coll" "$size" "$size" "$bad" >"$rules"
param=$(echo "LOOM_${coll}_ALGORITHM" | tr a-z A-Z)

# bench LABEL [VAR=VALUE...]: one run; appends "LABEL MEAN_US" to $out/times.
bench() {
    label=$1
    shift
    xs=""
    for v; do xs="$xs -x ${v%%=*}"; done
    # shellcheck disable=SC2086
    env "$@" $mpirun_cmd $xs -np "$np" "$bench" "$coll" --api loom -m "$size:$size" -i "$iters" -x "$warm" \
        $extra >"$out/run.txt" 2>&1 || { cat "$out/run.txt" >&2; exit 1; }
    us=$(awk '/^[0-9]/ { v = $2 } END { print v }' "$out/run.txt")
    echo "$label $us" >>"$out/times"
    printf '  %-28s %10s us\n' "$label" "$us"
}

echo "# $coll $size B on $np ranks; rules file: $bad; $iters timed calls after $warm; load $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$out/times"
: >"$out/chosen"
for r in $(seq 1 "$reps"); do
    echo "# repetition $r"
    bench bad LOOM_RULES_FILE="$rules"
    bench adapt LOOM_RULES_FILE="$rules" LOOM_ADAPT=1
    line=$(grep "^# adapt: $coll " "$out/run.txt" | head -1)
    [ -n "$line" ] || { echo "adapt-convergence: the adapt run says nothing learnt for $coll:" >&2; cat "$out/run.txt" >&2; exit 1; }
    echo "  $line"
    chosen=$(echo "$line" | sed -n 's/^# adapt: [^:]*: \([a-z_0-9]*\).*/\1/p')
    echo "$chosen" >>"$out/chosen"
    for cand in $(echo "$line" | sed -n 's/.*timed: \([^;]*\);.*/\1/p' | tr ',' '\n' | awk '{ print $1 }'); do
        bench "$cand" LOOM_RULES_FILE="$rules" "$param=$cand"
    done
done
echo "# medians over $reps repetitions (us per call); load $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v chosen_file="$out/chosen" '
    { t[$1] = t[$1] " " $2; n[$1]++ }
    function median(list,   a, k, i, j, x) {
        k = split(list, a, " ")
        for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    END {
        while ((getline c < chosen_file) > 0) chosen[c]++
        best = ""; for (l in t) { m[l] = median(t[l]); if (l != "bad" && l != "adapt" && (best == "" || m[l] < m[best])) best = l }
        for (l in t) printf "  %-28s %10.1f  (%d runs)\n", l, m[l], n[l]
        top = ""; for (c in chosen) if (top == "" || chosen[c] > chosen[top]) top = c
        printf "adapt / best forced (%s): %.3f\n", best, m["adapt"] / m[best]
        if (top in m) printf "adapt / its choice forced (%s, chosen in %d of %d): %.3f\n", top, chosen[top], n["adapt"], m["adapt"] / m[top]
        printf "adapt / bad rules (%s): %.3f\n", "bad", m["adapt"] / m["bad"]
    }' "$out/times"
