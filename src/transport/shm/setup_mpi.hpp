// The shared-memory transport's set-up from MPI (see transport/registry.hpp).
#pragma once
#include "transport/registry.hpp"

namespace loom {

// Collective over setup.node: attaches the intra-node path among the ranks
// of this one's node when it has more than one and the shared_memory
// parameter is on; a failure on any rank of the node leaves the whole node
// on point-to-point (said at verbose 1).
void set_up_shared_memory_mpi(const MpiSetup &setup, SetupContext &c);

}  // namespace loom
