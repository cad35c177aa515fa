#!/bin/sh
# libFuzzer check of every parser and argument check: builds libloom with
# clang, coverage instrumentation and -fsanitize=address,undefined in
# build-fuzz/, links the targets of tests/fuzz/ against it, replays the
# inputs of past findings (tests/fuzz/regressions/TARGET/), then fuzzes
# each target for SECONDS from its seed corpus (tests/fuzz/corpus/TARGET/;
# what it finds new stays in build-fuzz/fuzz/corpus/). A crash, a sanitizer
# report, a leak, an input slower than 10 s (a hang; 60 s for the call
# description, which simulates plans) or one that takes more than 2 GB fails
# the run, with the input's path in the output. About 3 minutes of build on
# 2 cores, then SECONDS per target.
# Usage: sh scripts/fuzz-check.sh [SECONDS]   (default 30, or FUZZ_SECONDS;
#        FUZZ_TARGETS="rules topology" for some targets only)
set -eu
cd "$(dirname "$0")/.."
src=$(pwd)
start=$(date +%s)
seconds=${1:-${FUZZ_SECONDS:-30}}
sh scripts/install-deps.sh --fuzz >/dev/null
[ -x configure ] || autoreconf -fi >/dev/null
mkdir -p build-fuzz
cd build-fuzz
# coll/loom and CUDA take no part in what is fuzzed.
[ -f Makefile ] || ../configure --quiet CC=clang-14 CXX=clang++-14 --enable-sanitizers=address,undefined \
    --without-cuda --without-ompi-devel
# -O1 as ASan advises; fuzzer-no-link: libloom's edges count as coverage.
make -j"$(nproc)" "LOOM_OPT_FLAGS=-O1 -g -fsanitize=fuzzer-no-link" src/libloom.la >fuzz-build.log 2>&1 ||
    { tail -30 fuzz-build.log; exit 1; }
var() { sed -n "s/^$1 = *//p" Makefile; }
flags="-O1 -g -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer"
cflags="$flags -Wall -Wextra -I$src/src -I$src/topo -Isrc $(var MPI_CFLAGS) $(var JSON_CFLAGS)"
libs="$(pwd)/src/.libs/libloom.so -Wl,-rpath,$(pwd)/src/.libs"
targets=${FUZZ_TARGETS:-"rules call_spec params topology rails c_api"}
# The rails' parsers are part of libloom with UCX only.
[ -n "$(var UCX_LIBS)" ] || targets=$(echo "$targets" | sed 's/rails//')
mkdir -p fuzz
for t in $targets; do
    # Compiled as C or C++, linked as C++ (UBSan's C++ runtime, for libloom).
    # The flags unquoted: their words are the compiler's arguments.
    if [ -f "$src/tests/fuzz/fuzz_$t.c" ]; then
        clang-14 $cflags -c -o "fuzz/fuzz_$t.o" "$src/tests/fuzz/fuzz_$t.c"
    else
        clang++-14 -std=c++17 $cflags -c -o "fuzz/fuzz_$t.o" "$src/tests/fuzz/fuzz_$t.cpp"
    fi
    clang++-14 $flags -o "fuzz/fuzz_$t" "fuzz/fuzz_$t.o" $libs
done
build_s=$(($(date +%s) - start))

export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"
[ -x /usr/lib/llvm-14/bin/llvm-symbolizer ] && export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer
status=0
total=0
for t in $targets; do
    artifacts=fuzz/findings/$t/
    mkdir -p "fuzz/corpus/$t" "$artifacts"
    log=fuzz/$t.log
    # Past findings first: each must now pass.
    regressions=$(find "$src/tests/fuzz/regressions/$t" -type f 2>/dev/null | sort)
    # $regressions unquoted: one argument per file (names without spaces).
    if [ -n "$regressions" ] && ! "./fuzz/fuzz_$t" -timeout=60 -rss_limit_mb=2048 $regressions >"$log" 2>&1; then
        echo "FAIL: fuzz $t: a regression input fails again"
        grep -B2 -A25 "ERROR\|runtime error\|Running: " "$log" | tail -40
        status=1
        continue
    fi
    dict=
    [ -f "$src/tests/fuzz/$t.dict" ] && dict="-dict=$src/tests/fuzz/$t.dict"
    # Explaining a call simulates up to 256 ranks' plans: about 2 s in a
    # release build, up to 40 s here (ASan and coverage).
    hang=10
    [ "$t" = call_spec ] && hang=60
    rc=0
    # $dict unquoted: no argument when there is none.
    "./fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=$hang -rss_limit_mb=2048 -print_final_stats=1 $dict \
        -artifact_prefix="$artifacts" "fuzz/corpus/$t" "$src/tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    total=$((total + ${runs:-0}))
    coverage=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
    if [ $rc -eq 0 ]; then
        echo "PASS: fuzz $t: ${runs:-0} runs in $seconds s, $coverage"
    else
        echo "FAIL: fuzz $t after ${runs:-0} runs ($coverage): the input is $(pwd)/$(sed -n 's/.*Test unit written to //p' "$log" | tail -1)"
        grep -A25 "ERROR\|runtime error\|deadly signal" "$log" | head -40
        status=1
    fi
done
echo "fuzz check took $(($(date +%s) - start)) s (build $build_s s), $total runs"
exit $status
