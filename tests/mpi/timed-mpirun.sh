#!/bin/sh
# A launcher that times every run: `make check MPIEXEC=/path/to/timed-mpirun.sh`
# runs the MPI test scripts through it, and each mpirun's seconds, exit
# status and arguments go to $MPITIMES (default /tmp/loom-mpi-times.txt),
# to find where the suite's time goes (docs/reliability.md, "The suite's
# time"). MPIEXEC_TIMED names the launcher it wraps (default mpirun).
start=$(date +%s.%N)
"${MPIEXEC_TIMED:-mpirun}" "$@"
rc=$?
echo "$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') rc=$rc $*" >>"${MPITIMES:-/tmp/loom-mpi-times.txt}"
exit $rc
