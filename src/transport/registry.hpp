// The one list of transports that communicators made from an MPI
// communicator set up, in the order messages try them, before MPI
// point-to-point, which carries everything else (NCCL's transport list).
// Adding a transport: its folder under src/transport/ and one line in
// registry.cpp (docs/design.md, "Adding a transport").
#pragma once
#include <mpi.h>

#include <vector>

#include "transport/setup_context.hpp"

namespace loom {

// What a transport's set-up gets besides the communicator: the MPI
// communicator, and the ranks that share this one's node (its machine and,
// when emulating, its emulated node), as an MPI communicator it may use for
// collective set-up.
struct MpiSetup {
    MPI_Comm comm;
    MPI_Comm node;
};

// The rank in `to` of each rank of `from`, in `from`'s order.
std::vector<int> translate_ranks(MPI_Comm from, MPI_Comm to);
// Communicator ranks of `group_comm`'s members, ascending.
std::vector<int> ranks_in(MPI_Comm group_comm, MPI_Comm comm);

struct TransportSetup {
    const char *name;
    // Collective over setup.node (and setup.comm if it needs): adds the
    // transport to the communicator, or leaves it out.
    void (*set_up)(const MpiSetup &setup, SetupContext &context);
};

const std::vector<TransportSetup> &transport_setups();

// The set-ups a communicator made without communication (a caller's
// transport: coll/loom) runs at its first collective.
const std::vector<DeferredSetup> &deferred_transport_setups();

}  // namespace loom
