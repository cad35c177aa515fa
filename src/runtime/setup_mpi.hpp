// Set-up of a communicator made from an MPI communicator (loom_comm_create):
// its node map, then every registered transport that wants it
// (transport/registry.hpp), before MPI point-to-point, which carries the rest.
#pragma once
#include <mpi.h>

#include <vector>

#include "runtime/communicator.hpp"

namespace loom {

// Collective over `comm`: sets the communicator's node map (the machine's,
// or the topology parameter's), then runs each registered transport's
// set-up. An invalid topology is an error; a transport that cannot be set up
// is left out (point-to-point still works).
Status setup_communicator_mpi(MPI_Comm comm, Communicator &c);

}  // namespace loom
