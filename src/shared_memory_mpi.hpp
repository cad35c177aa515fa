// Shared-memory set-up for a communicator made from an MPI communicator.
#pragma once
#include <mpi.h>

#include "communicator.hpp"

namespace loom {

// Collective over `comm`. Attaches the intra-node path when the node has
// more than one rank and the shared_memory parameter is on; a failure on any
// rank of the node leaves the whole node on point-to-point.
Status attach_shared_memory_mpi(MPI_Comm comm, Communicator &c);

}  // namespace loom
