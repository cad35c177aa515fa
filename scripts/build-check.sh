#!/bin/sh
# Loom builds wherever configure runs: copies the source tree (the files git
# tracks or would track, or the tree without its build folders) to a scratch folder and
# builds libloom, libloom-mpi, coll/loom and loom-info there in the source folder itself,
# as `autoreconf -fi && ./configure && make` does, then runs loom-info.
# (test.sh builds in build/, and CI's ASan check in a folder outside the
# tree.) -O0: only whether it builds is checked. Run by CI.
# Usage: sh scripts/build-check.sh
set -eu
cd "$(dirname "$0")/.."
start=$(date +%s)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/loom-build-check.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard | tar -cf - --null -T - | tar -xf - -C "$scratch"
else
    tar -cf - --exclude='./build*' --exclude=./autom4te.cache --exclude=./configure --exclude=./Makefile . |
        tar -xf - -C "$scratch"
fi
cd "$scratch"
log=$scratch/build-check.log
if ! { autoreconf -fi && ./configure --quiet && make -j"$(nproc)" LOOM_OPT_FLAGS=-O0 src/libloom.la src/loom-info pmpi/libloom-mpi.la &&
    { ! grep -q '^ompicomponent_LTLIBRARIES = coll/mca_coll_loom.la' Makefile ||
        make -j"$(nproc)" LOOM_OPT_FLAGS=-O0 coll/mca_coll_loom.la; }; } >"$log" 2>&1; then
    echo "FAIL: build in the source folder (autoreconf -fi && ./configure && make):"
    grep -E "error|Error" "$log" | head -20
    exit 1
fi
if ! ./src/loom-info -a >/dev/null; then
    echo "FAIL: loom-info built in the source folder does not run"
    exit 1
fi
echo "PASS: build in the source folder ($(( $(date +%s) - start )) s)"
