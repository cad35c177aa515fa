#!/bin/sh
# libloom-mpi, Loom for plain MPI programs without coll/loom, under the MPI
# this build was configured with (Open MPI's mpirun, or MPICH's mpiexec in
# scripts/mpich-check.sh):
#   - test_component (every collective, blocking, nonblocking and
#     persistent, on several communicators, calls Loom hands down) with the
#     library preloaded at 1-5 ranks; Loom's statistics must show every
#     collective handled and every Loom communicator freed; then the same
#     program without it (the MPI's own collectives, same verdict), and
#     linked against the library instead of preloaded;
#   - the same with Loom's progress thread driving the calls;
#   - test_large_count: MPI 4's large-count forms (MPI_Allreduce_c, ...),
#     every collective and form, against the MPI's own (skipped under MPI 3);
#   - test_comm_lifecycle: communicators made and freed in loops leave no
#     Loom communicator behind;
#   - loom-bench --api mpi -c (an OSU-style benchmark validating every
#     result) for every collective, blocking and nonblocking;
#   - a wrong argument is the MPI's error, with Loom's message (one rank's
#     alone included: the job ends instead of hanging).
set -u
MPIEXEC=${MPIEXEC:-mpirun}
build=${top_builddir:-.}
lib="$build/pmpi/.libs/libloom-mpi.so"
if [ ! -f "$lib" ]; then
    echo "SKIP: $lib was not built"
    exit 77
fi
if ! command -v "$MPIEXEC" >/dev/null 2>&1; then
    echo "SKIP: no MPI launcher ($MPIEXEC) found"
    exit 77
fi
lib=$(cd "$(dirname "$lib")" && pwd)/libloom-mpi.so
libdir=$(cd "$build/src/.libs" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The launchers pass variables to the ranks differently; the launcher itself
# must not load the library.
open_mpi=0
"$MPIEXEC" --version 2>&1 | grep -q "Open MPI" && open_mpi=1
if [ "$open_mpi" -eq 1 ]; then
    env_flag() { printf -- '-x %s=%s' "$1" "$2"; }
    launch() { timeout 300 "$MPIEXEC" --oversubscribe --mca btl self,vader --mca mpi_yield_when_idle 1 "$@"; }
    # Open MPI 4.1's op/avx saturates 8-bit sums (open-mpi/ompi#8045), which
    # test_component's uint8 reduce_scatter sees when Open MPI runs it.
    own_flags="--mca op ^avx"
else
    own_flags=
    env_flag() { printf -- '-genv %s %s' "$1" "$2"; }
    launch() { timeout 300 "$MPIEXEC" "$@"; }
fi
preload_quiet="$(env_flag LD_PRELOAD "$lib") $(env_flag LD_LIBRARY_PATH "$libdir")"
preload="$preload_quiet $(env_flag LOOM_MPI_STATS 1)"
status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

fail() {
    echo "FAIL: $*"
    tail -20 "$log"
    status=1
}

# stats_ok LABEL COLLECTIVES: each named collective handled by Loom at least
# once, and every Loom communicator made was freed.
stats_ok() {
    for wanted in $2; do
        if ! grep -Eq "^  $wanted +[1-9][0-9]* " "$log"; then
            fail "$1: Loom's statistics do not show $wanted handled"
            return 1
        fi
    done
    line=$(grep "loom communicators:" "$log")
    made=$(echo "$line" | sed -n 's/.*: \([0-9]*\) created, \([0-9]*\) freed with.*, \([0-9]*\) freed at.*/\1 \2 \3/p')
    set -- $made
    if [ $# -ne 3 ] || [ "$1" -ne $(($2 + $3)) ] || [ "$1" -lt 1 ]; then
        fail "$1: Loom communicators made and freed do not balance: $line"
        return 1
    fi
    return 0
}

all="allreduce reduce_scatter reduce_scatter_block allgather alltoall alltoallv allgatherv"
for np in 1 2 3 4 5; do
    # shellcheck disable=SC2086 # the flags are words
    if launch -n "$np" $preload "$build/tests/mpi/test_component" >"$log" 2>&1 &&
        grep -q "^test_component np=$np: 0 failures" "$log"; then
        stats_ok "test_component np=$np preloaded" "$all" &&
            echo "PASS: test_component np=$np with libloom-mpi preloaded: 0 failures, $(grep 'loom communicators:' "$log" | sed 's/^ *//')"
    else
        fail "test_component np=$np with libloom-mpi preloaded"
    fi
done
# Loom's progress thread: its MPI calls pass beside the program's.
# shellcheck disable=SC2086
if launch -n 3 $preload $(env_flag LOOM_PROGRESS_THREAD on) "$build/tests/mpi/test_component" >"$log" 2>&1 &&
    grep -q "^test_component np=3: 0 failures" "$log" &&
    grep -Eq "^  MPI_COMM_WORLD: .*progress thread: on: [1-9][0-9]* calls driven by the thread" "$log"; then
    stats_ok "test_component np=3 with the progress thread" "$all" &&
        echo "PASS: test_component np=3 with libloom-mpi preloaded and the progress thread: 0 failures, $(sed -n 's/.*progress thread: on: //p' "$log")"
else
    fail "test_component np=3 with libloom-mpi preloaded and the progress thread"
fi
# The MPI's own collectives: the same verdict, no Loom. MPICH 4.0's own
# MPI_Allgatherv on a one-rank communicator ignores displs (it writes the
# block at the start of recvbuf), which test_component reports; nothing
# else may fail.
# shellcheck disable=SC2086
if launch -n 4 $own_flags "$build/tests/mpi/test_component" >"$log" 2>&1 && grep -q "^test_component np=4: 0 failures" "$log" &&
    ! grep -q "loom-mpi stats" "$log"; then
    echo "PASS: test_component np=4 without libloom-mpi: 0 failures"
elif [ "$open_mpi" -eq 0 ] && grep -q "^test_component np=4: [1-9][0-9]* failures" "$log" &&
    ! grep " p=[0-9]" "$log" | grep -v "allgatherv p=1 " | grep -q . && ! grep -q "loom-mpi stats" "$log"; then
    echo "PASS: test_component np=4 without libloom-mpi: only $MPIEXEC's own defect, MPI_Allgatherv on one rank ignoring displs ($(grep -c "allgatherv p=1 " "$log") reports)"
else
    fail "test_component np=4 without libloom-mpi"
fi
# Linked, not preloaded.
# shellcheck disable=SC2086
if launch -n 3 $(env_flag LD_LIBRARY_PATH "$(cd "$build/pmpi/.libs" && pwd):$libdir") $(env_flag LOOM_MPI_STATS 1) \
    "$build/tests/mpi/test_component_linked" >"$log" 2>&1 && grep -q "^test_component np=3: 0 failures" "$log"; then
    stats_ok "test_component_linked np=3" "$all" && echo "PASS: test_component_linked np=3 (linked against libloom-mpi): 0 failures"
else
    fail "test_component_linked np=3 (linked against libloom-mpi)"
fi

# MPI 4's large-count forms (MPI_Allreduce_c, ...) against the MPI's own
# int-count collectives, which the program calls through PMPI_: Loom's
# statistics then count only the _c calls (and the verdict's allreduce).
# Not on one rank, where MPICH 4.0's own MPI_Allgatherv ignores displs.
for np in 2 3 5; do
    # shellcheck disable=SC2086
    if launch -n "$np" $preload "$build/tests/mpi/test_large_count" >"$log" 2>&1 &&
        grep -q "^SKIP: test_large_count" "$log"; then
        [ "$np" -eq 2 ] && grep "^SKIP: test_large_count" "$log"
    elif grep -q "^test_large_count np=$np: [0-9]* cases per rank, 0 failures" "$log"; then
        stats_ok "test_large_count np=$np" "$all" &&
            echo "PASS: $(grep "^test_large_count np=$np" "$log"), every _c form handled by Loom"
    else
        fail "test_large_count np=$np with libloom-mpi preloaded"
    fi
done

# A Fortran program (use mpi). MPICH's Fortran bindings call the C MPI_
# functions, so the preloaded library runs them, none handed down; Open
# MPI's call PMPI_ directly, so there Fortran reaches Loom through coll/loom
# (run_component_tests.sh) and the library must only leave results right.
fortran_collectives="allreduce reduce_scatter_block allgather alltoall alltoallv allgatherv"
if [ -x "$build/tests/mpi/test_fortran" ]; then
    for np in 1 3; do
        # shellcheck disable=SC2086
        if launch -n "$np" $preload "$build/tests/mpi/test_fortran" >"$log" 2>&1 &&
            grep -q "^test_fortran np=$np: [0-9]* cases, 0 failures" "$log"; then
            if [ "$open_mpi" -eq 1 ]; then
                echo "PASS: $(grep "^test_fortran np=" "$log") with libloom-mpi preloaded (Open MPI's Fortran bindings call PMPI_: Fortran reaches Loom through coll/loom)"
            elif stats_ok "test_fortran np=$np" "$fortran_collectives"; then
                handed_down=$(for coll in $fortran_collectives; do grep -E "^  $coll " "$log"; done | grep -Ev "^  [a-z_]+ +[0-9]+ +[0-9]+ +0 ")
                if [ -z "$handed_down" ]; then
                    echo "PASS: $(grep "^test_fortran np=" "$log") with libloom-mpi preloaded, every call run by Loom"
                else
                    fail "test_fortran np=$np: calls handed down to the MPI: $handed_down"
                fi
            fi
        else
            fail "test_fortran np=$np with libloom-mpi preloaded"
        fi
    done
else
    echo "SKIP: test_fortran: configure found no Fortran wrapper for this MPI (MPIFORT)"
fi

# Communicators in loops: every Loom communicator freed with its MPI one,
# but for MPI_COMM_WORLD's and MPI_COMM_SELF's, freed at MPI_Finalize.
for np in 3 4; do
    # shellcheck disable=SC2086
    if launch -n "$np" $preload "$build/tests/mpi/test_comm_lifecycle" -l 10 -t 120 >"$log" 2>&1 &&
        grep -q "^test_comm_lifecycle np=$np: .* 0 failures" "$log"; then
        at_finalize=$(sed -n 's/.*, \([0-9]*\) freed at MPI_Finalize.*/\1/p' "$log")
        if stats_ok "test_comm_lifecycle np=$np" "allreduce alltoall" && [ "${at_finalize:-9}" -le 2 ]; then
            echo "PASS: test_comm_lifecycle np=$np with libloom-mpi preloaded: $(grep 'loom communicators:' "$log" | sed 's/^ *//')"
        elif [ "${at_finalize:-9}" -gt 2 ]; then
            fail "test_comm_lifecycle np=$np: ${at_finalize:-?} Loom communicators were left for MPI_Finalize"
        fi
    else
        fail "test_comm_lifecycle np=$np with libloom-mpi preloaded"
    fi
done

# An OSU-style benchmark validating every result.
for coll in allreduce reduce_scatter reduce_scatter_block allgather alltoall alltoallv allgatherv iallreduce ialltoallv; do
    # shellcheck disable=SC2086
    if launch -n 4 $preload "$build/perf/loom-bench" "$coll" --api mpi -c -m 1:262144 -i 20 -x 2 >"$log" 2>&1; then
        base=${coll#i}
        stats_ok "loom-bench $coll" "$base" && echo "PASS: loom-bench $coll --api mpi -c np=4 with libloom-mpi preloaded"
    else
        fail "loom-bench $coll --api mpi -c np=4 with libloom-mpi preloaded"
    fi
done

# Over two emulated nodes a nonblocking alltoallv learns the counts first
# and chooses its algorithm after its start: the statistics count it once
# done, so the algorithms add up to the calls.
# shellcheck disable=SC2086
if launch -n 4 $preload $(env_flag LOOM_TOPOLOGY nodes=2) "$build/perf/loom-bench" ialltoallv --api mpi -c \
    -m 1024:4096 -i 5 -x 1 --traffic zipf:1.2 >"$log" 2>&1 &&
    awk '$1 == "alltoallv" { n = $2; for (i = 5; i <= NF; i++) { split($i, kv, "="); sum += kv[2] } }
        END { exit !(n > 0 && sum == n) }' "$log"; then
    echo "PASS: ialltoallv over two nodes with libloom-mpi: $(grep -E '^  alltoallv ' "$log" | tr -s ' ')"
else
    fail "ialltoallv over two nodes with libloom-mpi: the algorithms do not add up to the calls"
fi

# Bad input (tests/mpi/bad_input.c): every case ends, every rank with the
# same class, an error where Open MPI's own collectives give one. Under
# Open MPI the classes are those of bad_input.expected; other MPIs number
# them differently.
# shellcheck disable=SC2086
launch -n 3 $preload_quiet "$build/tests/mpi/bad_input" --null-buffer >"$log" 2>/dev/null
expected="$(dirname "$0")/bad_input.expected"
if [ "$open_mpi" -eq 1 ]; then
    if diff "$expected" "$log" >/dev/null; then
        echo "PASS: bad input with libloom-mpi preloaded: $(wc -l <"$log") cases, each with Open MPI's error class"
    else
        fail "bad input with libloom-mpi preloaded (expected, then got): $(diff "$expected" "$log")"
    fi
elif awk -F'  +' 'NR == FNR { want[FNR] = ($2 !~ /^0 /); n = FNR; next }
        { split($2, got, " "); for (i = 2; i <= 3; ++i) if (got[i] != got[1]) exit 1
          if ((got[1] != 0) != want[FNR]) exit 1; rows++ }
        END { exit rows == n ? 0 : 1 }' "$expected" "$log"; then
    echo "PASS: bad input with libloom-mpi preloaded: $(wc -l <"$log") cases, an error on every rank where Open MPI gives one"
else
    fail "bad input with libloom-mpi preloaded (Open MPI's classes, then these): $(paste -d'\n' "$expected" "$log")"
fi

# One rank's MPI_Alltoallv receive blocks overlap: an error with Loom's
# message on that rank, and the job ends (its handler is fatal), no hang.
# shellcheck disable=SC2086
launch -n 3 $preload_quiet "$build/tests/mpi/test_mismatch" -m -o >"$log" 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "loom-mpi: MPI_Alltoallv: rank 0: the blocks from ranks .* overlap in recvbuf" "$log" &&
    ! grep -q "returned" "$log"; then
    echo "PASS: one rank's overlapping MPI_Alltoallv receive blocks end the job with Loom's message (rc $rc)"
else
    fail "one rank's overlapping MPI_Alltoallv receive blocks (rc $rc; 124: a hang)"
fi

exit $status
