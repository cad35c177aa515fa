#!/bin/sh
# Instructions per call of each collective at one rank, counted by callgrind:
# repeatable to a few instructions on a noisy machine, unlike times.
# Each row runs perf/loom-bench twice (N and 2N timed calls, the same warm-up,
# no validation) with collection on only inside the MPI entry point
# (--toggle-collect=*MPI_Allreduce ...), and reports (Ir(2N) - Ir(N)) / N:
# start-up, warm-up and first calls cancel. "non-mem*" leaves out the
# instructions spent in memcpy/memmove/memset themselves (under valgrind a
# rep movsb counts once per byte, so they dominate large messages).
# loom-bench's blocking OSU loop runs exactly -x + -i calls; only the
# nonblocking forms and --interleave-default depend on measured time, and
# neither is used here.
usage() {
    cat >&2 <<EOF
usage: $0 [-s SIZES] [-c COLLS] [-n N] [-x WARMUP] [-d | -p] [-w] [-t PCT] [-f K] [BUILD | OLD_BUILD NEW_BUILD]
  BUILD       build directory (default build/); with two, compares: new/old per row,
              exit 1 when a total or non-mem* ratio is above 1 + PCT/100
  -s SIZES    bytes, comma-separated (default 8,65536)
  -c COLLS    default allreduce,reduce_scatter,reduce_scatter_block,allgather,alltoall
  -n N        timed calls of the shorter run; the other runs 2N (default 1000)
  -x WARMUP   warm-up calls in both runs (default 100)
  -d          Open MPI's default collectives (--mca coll ^loom) instead of coll/loom
  -p          libloom-mpi preloaded (BUILD/pmpi), over Open MPI's default collectives, instead of coll/loom
  -w          count the whole process (all threads, start-up; noisier) instead of the MPI call
  -t PCT      compare threshold in percent (default 2)
  -f K        also list, per row, the K functions with the most instructions per call
              (each function's own instructions, (Ir(2N)-Ir(N))/N): where a call's cost goes
EOF
    exit 2
}
sizes=8,65536 colls=allreduce,reduce_scatter,reduce_scatter_block,allgather,alltoall
n=1000 warmup=100 default=0 preload=0 whole=0 pct=2 functions=0
while getopts s:c:n:x:dpwt:f:h o; do
    case $o in
        s) sizes=$OPTARG ;; c) colls=$OPTARG ;; n) n=$OPTARG ;; x) warmup=$OPTARG ;;
        d) default=1 ;; p) preload=1 ;; w) whole=1 ;; t) pct=$OPTARG ;; f) functions=$OPTARG ;; *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ $# -le 2 ] || usage
[ $# -ge 1 ] || set -- build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d /tmp/callgrind-per-call.XXXXXX) || exit 2
trap 'rm -rf "$tmp"' EXIT

# run BUILD COLL BYTES ITERS: prints "total mem*" instructions collected.
run() {
    first=$(printf %s "$2" | cut -c1 | tr '[:lower:]' '[:upper:]')
    entry="*MPI_$first$(printf %s "$2" | cut -c2-)"
    if [ $default = 1 ]; then mca="--mca coll ^loom"
    elif [ $preload = 1 ]; then mca="--mca coll ^loom -x LD_PRELOAD=$1/pmpi/.libs/libloom-mpi.so -x LD_LIBRARY_PATH=$1/src/.libs"
    else mca="--mca mca_base_component_path $1/coll/component-path:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 --mca coll_loom_priority 100"; fi
    if [ $whole = 1 ]; then collect=; else collect="--collect-atstart=no --toggle-collect=$entry"; fi
    out=$tmp/cg.out
    # shellcheck disable=SC2086
    if ! mpirun -np 1 $mca "$1/libtool" --mode=execute valgrind -q --tool=callgrind $collect \
        --callgrind-out-file="$out" "$1/perf/loom-bench" "$2" -m "$3:$3" -i "$4" -x "$warmup" >"$tmp/log" 2>&1; then
        echo "$0: loom-bench $2 -m $3:$3 -i $4 failed in $1:" >&2
        tail -5 "$tmp/log" >&2
        exit 2
    fi
    # Each function's own instructions, "function<TAB>Ir", for -f.
    callgrind_annotate --auto=no --inclusive=no --threshold=100 "$out" 2>/dev/null |
        sed -n -E 's/^ *([0-9,]+) \( *[0-9.]+%\)  ([^=<].*)/\2\t\1/p' | sed -E 's/ \[[^]]*\]\t/\t/' |
        awk -F'\t' '$1 != "PROGRAM TOTALS" { gsub(",", "", $2); a[$1] += $2 } END { for (k in a) print k "\t" a[k] }' |
        LC_ALL=C sort >"$tmp/functions.$4"
    callgrind_annotate --auto=no --inclusive=no --threshold=100 "$out" 2>/dev/null | awk '
        /PROGRAM TOTALS/ { gsub(",", "", $1); total = $1 }
        /:_*mem(cpy|move|set)/ && !/=>/ { gsub(",", "", $1); mem += $1 }
        END { if (total != "") printf "%.0f %.0f\n", total, mem }'
}

# per_call BUILD COLL BYTES: prints "per-call non-mem*-per-call".
per_call() {
    r1=$(run "$1" "$2" "$3" "$n") && [ -n "$r1" ] || exit 2
    r2=$(run "$1" "$2" "$3" $((2 * n))) && [ -n "$r2" ] || exit 2
    echo "$r1 $r2" | awk -v n="$n" '{ printf "%.1f %.1f\n", ($3 - $1) / n, ($3 - $4 - ($1 - $2)) / n }'
    [ "$functions" -gt 0 ] && LC_ALL=C join -t"$(printf '\t')" -a2 -e0 -o 0,1.2,2.2 "$tmp/functions.$n" "$tmp/functions.$((2 * n))" |
        awk -F'\t' -v n="$n" '{ d = ($3 - $2) / n; if (d >= 0.5) printf "%10.1f  %s\n", d, substr($1, 1, 110) }' |
        sort -rn | head -n "$functions" >"$tmp/top"
    return 0
}

for b in "$@"; do
    if [ ! -x "$b/perf/loom-bench" ] || [ ! -x "$b/libtool" ]; then
        echo "$0: $b: no perf/loom-bench or libtool (built?)" >&2
        exit 2
    fi
done
old=$(cd "$1" && pwd) && { [ $# = 1 ] || new=$(cd "$2" && pwd); } || exit 2
side=coll/loom
[ $default = 1 ] && side="Open MPI default (coll ^loom)"
[ $preload = 1 ] && side="libloom-mpi preloaded"
echo "# instructions per call, 1 rank, $side, (Ir(2N)-Ir(N))/N, N=$n, warm-up $warmup$([ $whole = 1 ] && echo ', whole process')"
if [ $# = 1 ]; then
    printf '%-22s %8s %14s %14s\n' collective bytes Ir/call non-mem*/call
else
    echo "# old: $old"
    echo "# new: $new"
    printf '%-22s %8s %12s %12s %8s %12s %12s %8s\n' collective bytes old new new/old old-nonmem new-nonmem new/old
fi
worse=0
for c in $(echo "$colls" | tr , ' '); do
    for s in $(echo "$sizes" | tr , ' '); do
        a=$(per_call "$old" "$c" "$s") || exit 2
        if [ $# = 1 ]; then
            echo "$c $s $a" | awk '{ printf "%-22s %8s %14.1f %14.1f\n", $1, $2, $3, $4 }'
            [ "$functions" -gt 0 ] && cat "$tmp/top"
        else
            b=$(per_call "$new" "$c" "$s") || exit 2
            echo "$c $s $a $b" | awk -v lim="$pct" '{
                r = $3 > 0 ? $5 / $3 : 0; q = $4 > 0 ? $6 / $4 : 0
                hi = r > 1 + lim / 100 || q > 1 + lim / 100
                printf "%-22s %8s %12.1f %12.1f %8.4f %12.1f %12.1f %8.4f%s\n", $1, $2, $3, $5, r, $4, $6, q,
                       (hi ? "  HIGHER" : "")
                exit hi }' || worse=1
        fi
    done
done
exit $worse
