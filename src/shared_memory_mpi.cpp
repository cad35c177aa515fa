// Shared-memory set-up for communicators made from an MPI communicator
// (loom_comm_create): the node group comes from MPI_Comm_split_type, the
// node's ranks agree on a random identity, create their inboxes, map each
// other's and then unlink the names, so nothing is left in /dev/shm.
#include "shared_memory_mpi.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "params.hpp"

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

Status attach_shared_memory_mpi(MPI_Comm comm, Communicator &c) {
    if (c.config().integer(kParamSharedMemory) == 0) return LOOM_SUCCESS;
    MPI_Comm node;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return fail(LOOM_ERR_TRANSPORT, "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
    int nlocal = 0, node_rank = 0;
    MPI_Comm_size(node, &nlocal);
    MPI_Comm_rank(node, &node_rank);
    if (nlocal < 2) {
        MPI_Comm_free(&node);
        return LOOM_SUCCESS;
    }
    SharedMemoryNode sm;
    {
        MPI_Group node_group, comm_group;
        MPI_Comm_group(node, &node_group);
        MPI_Comm_group(comm, &comm_group);
        std::vector<int> in_node(nlocal);
        sm.local_ranks.resize(nlocal);
        for (int i = 0; i < nlocal; ++i) in_node[i] = i;
        MPI_Group_translate_ranks(node_group, nlocal, in_node.data(), comm_group, sm.local_ranks.data());
        MPI_Group_free(&node_group);
        MPI_Group_free(&comm_group);
        std::sort(sm.local_ranks.begin(), sm.local_ranks.end());
    }
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
            MPI_Comm_free(&node);
            return c.attach_shared_memory(std::move(sm));
        }
    }
    MPI_Comm_free(&node);
    // Not fatal: point-to-point still works. Say why once per rank that failed.
    if (!why.empty() && c.config().integer(kParamVerbose) >= 1)
        std::fprintf(stderr, "loom: rank %d: shared-memory path off: %s\n", c.rank(), why.c_str());
    return LOOM_SUCCESS;
}

}  // namespace loom
