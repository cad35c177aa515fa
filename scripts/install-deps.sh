#!/bin/sh
# Installs the Debian 12 packages Loom needs to build, test and benchmark.
# Idempotent and non-interactive: installs only what is missing.
set -eu
PACKAGES="autoconf automake libtool make g++ pkg-config
openmpi-bin libopenmpi-dev libhwloc-dev hwloc libucx-dev libgtest-dev
man-db groff-base gnuplot-nox procps iproute2 util-linux nlohmann-json3-dev"
missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "install-deps: installing$missing"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
