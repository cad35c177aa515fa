// Node and shared-memory set-up for a communicator made from an MPI communicator.
#pragma once
#include <mpi.h>

#include "runtime/communicator.hpp"

namespace loom {

// Collective over `comm`: sets the communicator's node map (the machine's,
// or the topology parameter's), then attaches the intra-node path among the
// ranks of each node when it has more than one and the shared_memory
// parameter is on; a failure on any rank of a node leaves that node on
// point-to-point. An invalid topology is an error.
Status setup_nodes_mpi(MPI_Comm comm, Communicator &c);

}  // namespace loom
