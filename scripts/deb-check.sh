#!/bin/sh
# Builds Loom's Debian packages (dpkg-buildpackage -us -uc -b) from a copy
# of this tree, then installs them into a scratch root: an overlay of this
# machine's / whose changes land in a tmpfs, so the machine itself is left
# as it was. Inside it, with no option or variable pointing at Loom:
#   - mpirun --mca coll_loom_priority 100 runs a validated allreduce through
#     the installed coll/loom, and its stats say Loom handled it;
#   - so does a plain mpirun with coll_loom_priority = 100 in
#     /etc/openmpi/openmpi-mca-params.conf (Loom for every job);
#   - a C program built with `pkg-config --cflags --libs loom` runs;
#   - dpkg -r removes every file the packages brought.
#   sh scripts/deb-check.sh [WORKDIR]      (root; packages: install-deps.sh --deb)
# LOOM_DEB_CHECK_TESTS=1 also runs the unit tests in the package build.
# The packages stay in WORKDIR (default /var/tmp/loom-deb). Prints PASS/FAIL lines.
set -eu
cd "$(dirname "$0")/.."
src=$(pwd)
work=${1:-/var/tmp/loom-deb}
[ "$(id -u)" = 0 ] || { echo "SKIP: the scratch root needs root (mount namespaces, overlayfs)"; exit 77; }
for c in dpkg-buildpackage dh fakeroot; do
    command -v "$c" >/dev/null 2>&1 || { echo "SKIP: $c not found (sh scripts/install-deps.sh --deb)"; exit 77; }
done
rm -rf "$work"
mkdir -p "$work/src"
# The working tree as git sees it (tracked and new files), without builds.
git ls-files -co --exclude-standard | grep -v '^debian/build/' | tar -cf - -T - | tar -xf - -C "$work/src"
echo "deb-check: building in $work/src"
start=$(date +%s)
# The unit tests that debian/rules runs are the suite's (scripts/test.sh):
# skipped here unless LOOM_DEB_CHECK_TESTS=1.
[ "${LOOM_DEB_CHECK_TESTS:-0}" = 1 ] || export DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-} nocheck"
if ! (cd "$work/src" && dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1); then
    tail -30 "$work/build.log"
    echo "FAIL: dpkg-buildpackage -us -uc -b (log: $work/build.log)"
    exit 1
fi
debs=$(cd "$work" && ls libloom_*.deb libloom-dev_*.deb openmpi-coll-loom_*.deb)
echo "deb-check: built in $(( $(date +%s) - start )) s: $(echo $debs)"
for d in $debs; do
    echo "  $d:"; dpkg-deb -c "$work/$d" | awk '$NF !~ /\/$/ { print "    " ($(NF - 1) == "->" ? $(NF - 2) " -> " $NF : $NF) }'
done
status=0
dpkg-deb -c "$work"/openmpi-coll-loom_*.deb | grep -q "/openmpi/lib/openmpi3/mca_coll_loom.so$" ||
    { echo "FAIL: openmpi-coll-loom does not put mca_coll_loom.so into Open MPI's component folder"; status=1; }

# The scratch root. Open MPI's own folder must not hold a Loom already.
ompi_dir=$(pkg-config --variable=libdir ompi-c)/openmpi3
if [ -e "$ompi_dir/mca_coll_loom.so" ]; then
    echo "SKIP: $ompi_dir already holds a mca_coll_loom.so (make uninstall it first)"
    exit 77
fi
cat >"$work/inside.sh" <<'INSIDE'
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd /debs
dpkg -i libloom_*.deb libloom-dev_*.deb openmpi-coll-loom_*.deb >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; echo "FAIL: dpkg -i"; exit 1; }
echo "PASS: dpkg -i of the three packages"
st=0
out=$(mpirun -np 2 --oversubscribe --mca coll_loom_priority 100 --mca coll_loom_stats 1 \
    loom-bench allreduce -m 8:65536 -i 5 -x 1 -c 2>&1)
if [ "$(echo "$out" | grep -c ' Pass$')" -eq 14 ] && echo "$out" | grep -Eq "^  allreduce +[1-9][0-9]* +[0-9]+ +0 "; then
    echo "PASS: mpirun --mca coll_loom_priority 100 loom-bench allreduce -c: 14 sizes validated, handled by the installed coll/loom"
    echo "$out" | grep -A3 "^coll/loom stats" | sed 's/^/    /'
else
    echo "$out" | tail -20; echo "FAIL: a collective through the installed coll/loom"; st=1
fi
# Loom for every job of the machine: Open MPI's own parameter file.
# (Debian's file ends without a newline.)
printf '\ncoll_loom_priority = 100\ncoll_loom_stats = 1\n' >>/etc/openmpi/openmpi-mca-params.conf
out=$(mpirun -np 2 --oversubscribe loom-bench alltoall -m 8:4096 -i 5 -x 1 -c 2>&1)
if [ "$(echo "$out" | grep -c ' Pass$')" -eq 10 ] && echo "$out" | grep -Eq "^  alltoall +[1-9][0-9]* +[0-9]+ +0 "; then
    echo "PASS: coll_loom_priority = 100 in /etc/openmpi/openmpi-mca-params.conf: a plain mpirun's alltoall handled by coll/loom"
else
    echo "$out" | tail -20; echo "FAIL: Loom enabled in openmpi-mca-params.conf"; st=1
fi
sed -i '/^coll_loom_/d' /etc/openmpi/openmpi-mca-params.conf
cat >/tmp/app.c <<'APP'
#include <loom.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, x, rc;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    loom_comm_t lc;
    if ((rc = loom_comm_create(MPI_COMM_WORLD, &lc))) { printf("%s\n", loom_strerror(rc)); return 1; }
    x = rank + 1;
    if ((rc = loom_allreduce(LOOM_IN_PLACE, &x, 1, LOOM_INT, LOOM_SUM, lc))) { printf("%s\n", loom_strerror(rc)); return 1; }
    if (rank == 0) printf("sum %d (want %d)\n", x, size * (size + 1) / 2);
    loom_comm_free(&lc);
    MPI_Finalize();
    return x != size * (size + 1) / 2;
}
APP
if mpicc /tmp/app.c -o /tmp/app $(pkg-config --cflags --libs loom) && app=$(mpirun -np 3 --oversubscribe /tmp/app 2>&1) &&
    [ "$app" = "sum 6 (want 6)" ]; then
    echo "PASS: a C program built with pkg-config --cflags --libs loom: $app"
else
    echo "$app"; echo "FAIL: a C program against libloom-dev"; st=1
fi
files=$(dpkg -L libloom libloom-dev openmpi-coll-loom | while read -r f; do [ -f "$f" ] && echo "$f"; done)
dpkg -r openmpi-coll-loom libloom-dev libloom >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; st=1; }
left=""
for f in $files; do [ -e "$f" ] && left="$left $f"; done
if [ -z "$left" ]; then
    echo "PASS: dpkg -r removed all $(echo "$files" | wc -l) files"
else
    echo "FAIL: left after dpkg -r:$left"; st=1
fi
exit $st
INSIDE
# A private mount namespace: the overlay, its tmpfs and the bind mounts
# vanish with it.
unshare --mount --propagation private sh -c '
    work=$1
    set -e
    mkdir -p "$work/scratch"
    mount -t tmpfs tmpfs "$work/scratch"
    mkdir -p "$work/scratch/upper" "$work/scratch/ovl" "$work/scratch/root"
    mount -t overlay overlay -o "lowerdir=/,upperdir=$work/scratch/upper,workdir=$work/scratch/ovl" "$work/scratch/root"
    r=$work/scratch/root
    for m in proc sys dev; do mount --rbind "/$m" "$r/$m"; done
    mount -t tmpfs tmpfs "$r/tmp"
    mount -t tmpfs tmpfs "$r/dev/shm"
    mount -t tmpfs tmpfs "$r/run"
    mkdir -p "$r/debs"
    mount --bind "$work" "$r/debs"
    exec chroot "$r" sh /debs/inside.sh' sh "$work" || status=1
[ -e "$ompi_dir/mca_coll_loom.so" ] && { echo "FAIL: the machine itself was changed ($ompi_dir)"; status=1; }
[ $status -eq 0 ] && echo "PASS: Debian packages built, installed into a scratch root, used and removed"
exit $status
