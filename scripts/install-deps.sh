#!/bin/sh
# Installs the Debian 12 packages Loom needs to build, test and benchmark.
# Idempotent and non-interactive: installs only what is missing.
#   install-deps.sh [--slurm] [--mpich] [--deb]
#     --slurm  Slurm and munge for the Slurm testbed (perf/testbed/slurm.sh)
#     --mpich  MPICH, to build and test libloom against a second MPI
#              (Open MPI stays the default mpicc and mpirun)
#     --deb    what dpkg-buildpackage needs to build Loom's Debian packages
#     --fuzz   clang 14 with libFuzzer and llvm-symbolizer (scripts/fuzz-check.sh)
set -eu
PACKAGES="autoconf automake libtool make g++ pkg-config
openmpi-bin libopenmpi-dev libhwloc-dev hwloc libucx-dev libgtest-dev
man-db groff-base gnuplot-nox procps iproute2 util-linux nlohmann-json3-dev"
mpich=no
for a in "$@"; do
    case $a in
        # libpmix-dev: Slurm's pmix plugin loads libpmix.so at run time.
        --slurm) PACKAGES="$PACKAGES slurmd slurmctld slurm-client munge libpmix-dev" ;;
        --mpich) PACKAGES="$PACKAGES mpich libmpich-dev"; mpich=yes ;;
        --deb) PACKAGES="$PACKAGES debhelper dpkg-dev fakeroot" ;;
        --fuzz) PACKAGES="$PACKAGES clang-14 libclang-rt-14-dev llvm-14" ;;
        *) echo "install-deps: unknown option $a (--slurm, --mpich, --deb, --fuzz)" >&2; exit 2 ;;
    esac
done
missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
else
    echo "install-deps: installing$missing"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi
# Where MPICH's alternatives outrank Open MPI's (it depends on the
# architecture), keep Open MPI's mpicc and mpirun the defaults; MPICH is
# used through mpicc.mpich and mpiexec.mpich.
if [ $mpich = yes ]; then
    for alt in mpi mpirun; do
        case $(readlink "/etc/alternatives/$alt" 2>/dev/null) in *openmpi*) continue ;; esac
        target=$(update-alternatives --list "$alt" 2>/dev/null | grep openmpi | head -1)
        [ -z "$target" ] || $SUDO update-alternatives --quiet --set "$alt" "$target"
    done
fi
