# Sourced by the MPI test scripts: the launcher (MPIEXEC, default mpirun;
# MPICH's Hydra too, whose options differ) and an environment that keeps
# Open MPI on shared memory and loopback. Exits 77 (skip) without one.
# Sets hydra (yes/no) and oversubscribe (the option mpirun needs for more
# ranks than cores; Hydra never refuses them).
MPIEXEC=${MPIEXEC:-mpirun}
if ! command -v "$MPIEXEC" >/dev/null 2>&1; then
    echo "SKIP: no MPI launcher ($MPIEXEC) found"
    exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No stray network probing.
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_mpi_yield_when_idle=1
# Hydra passes the whole environment to every rank; Open MPI's mpirun needs -x.
if "$MPIEXEC" --version 2>&1 | grep -q HYDRA; then
    hydra=yes oversubscribe=""
else
    hydra=no oversubscribe=--oversubscribe
fi
