// The shared-memory transport's set-up for communicators made from an MPI
// communicator, registered in transport/registry.cpp.
#include "transport/shm/setup_mpi.hpp"

#include <chrono>
#include <cstdio>
#include <random>

#include "core/params.hpp"
#include "transport/shm/params.hpp"

namespace loom {
namespace {

// Every rank of the node must take the same path: a failure anywhere on the
// node turns the shared-memory path off on the whole node.
bool node_agrees(bool ok, MPI_Comm node) {
    int mine = ok ? 1 : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, node);
    return all == 1;
}

}  // namespace

// The ranks of a node agree on a random identity, create their inboxes, map
// each other's and unlink the names, so nothing is left in /dev/shm.
void set_up_shared_memory_mpi(const MpiSetup &setup, SetupContext &c) {
    if (c.config().integer(kParamSharedMemory) == 0) return;
    const MPI_Comm comm = setup.comm, node = setup.node;
    int nlocal = 0, node_rank = 0;
    MPI_Comm_size(node, &nlocal);
    MPI_Comm_rank(node, &node_rank);
    if (nlocal < 2) return;
    SharedMemoryNode sm;
    sm.local_ranks = ranks_in(node, comm);
    uint64_t identity = 0;
    if (node_rank == 0) {
        std::random_device rd;
        identity = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                   static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    }
    MPI_Bcast(&identity, 1, MPI_UINT64_T, 0, node);
    sm.identity = identity;
    char key[32];
    std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(identity));

    Status st = shm_create_inbox(key, c.rank(), &sm);
    std::string why = st == LOOM_SUCCESS ? "" : last_error_message();
    if (node_agrees(st == LOOM_SUCCESS, node)) {
        st = shm_open_peers(key, c.rank(), &sm);
        if (st != LOOM_SUCCESS) why = last_error_message();
        if (node_agrees(st == LOOM_SUCCESS, node)) {
            sm.own->unlink();  // every peer has mapped it
            st = c.attach_shared_memory(std::move(sm));
            if (st == LOOM_SUCCESS) return;
            why = last_error_message();
        }
    }
    // Not fatal: point-to-point still works. Say why on the ranks that failed.
    if (!why.empty() && c.config().integer(kParamVerbose) >= 1)
        std::fprintf(stderr, "loom: rank %d: shared-memory path off: %s\n", c.rank(), why.c_str());
}

}  // namespace loom
