// Set-up of a communicator made from an MPI communicator (loom_comm_create):
// its node map, then every registered transport that wants it
// (transport/registry.hpp), before MPI point-to-point, which carries the rest.
#pragma once
#include <mpi.h>

#include <vector>

#include "runtime/communicator.hpp"

namespace loom {

// What a transport's set-up gets: the communicator, and the ranks that
// share this one's node (its machine and, when emulating, its emulated node),
// as an MPI communicator it may use for collective set-up.
struct MpiSetup {
    MPI_Comm comm;
    MPI_Comm node;
};

// Communicator ranks of `group_comm`'s members, ascending.
std::vector<int> ranks_in(MPI_Comm group_comm, MPI_Comm comm);

// Collective over `comm`: sets the communicator's node map (the machine's,
// or the topology parameter's), then runs each registered transport's
// set-up. An invalid topology is an error; a transport that cannot be set up
// is left out (point-to-point still works).
Status setup_communicator_mpi(MPI_Comm comm, Communicator &c);

}  // namespace loom
