// The one list of transports that communicators made from an MPI
// communicator set up, in the order messages try them, before MPI
// point-to-point, which carries everything else (NCCL's transport list).
// Adding a transport: its folder under src/transport/ and one line in
// registry.cpp (docs/design.md, "Adding a transport").
#pragma once
#include <vector>

#include "runtime/setup_mpi.hpp"

namespace loom {

struct TransportSetup {
    const char *name;
    // Collective over setup.node (and setup.comm if it needs): adds the
    // transport to the communicator, or leaves it out.
    void (*set_up)(const MpiSetup &setup, Communicator &c);
};

const std::vector<TransportSetup> &transport_setups();

// The set-ups a communicator made without communication (a caller's
// transport: coll/loom) runs at its first blocking collective.
const std::vector<void (*)(Communicator &)> &deferred_transport_setups();

}  // namespace loom
