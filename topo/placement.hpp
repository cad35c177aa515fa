// Whether this process has cores of its own: read from its CPU affinity and
// the machine's online cores, given how many ranks share the machine. Waits
// spin only where a rank has a core; the progress thread starts (auto) only
// where one more is spare.
#pragma once

namespace loom {

// A core for each of `ranks_here` ranks on this machine. With
// `trust_yield_hint`, Open MPI's mpi_yield_when_idle=1 in the environment
// (as mpirun passes --mca) says the cores are shared.
bool core_per_rank(int ranks_here, bool trust_yield_hint);
// Two cores for each of `ranks_here` ranks (one for its progress thread).
bool spare_core_per_rank(int ranks_here);

}  // namespace loom
