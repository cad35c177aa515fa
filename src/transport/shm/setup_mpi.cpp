// Node set-up for communicators made from an MPI communicator
// (loom_comm_create). Which ranks share a node comes from
// MPI_Comm_split_type, or from the emulated topology parameter (declared for
// MPI_COMM_WORLD's ranks, so sub-communicators inherit it). The ranks of a
// node (real and, when emulating, emulated) then agree on a random identity,
// create their inboxes, map each other's and unlink the names, so nothing is
// left in /dev/shm.
#include "transport/shm/setup_mpi.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "runtime/params.hpp"

namespace loom {
namespace {

// Every rank of the node must take the same path: a failure anywhere on the
// node turns the shared-memory path off on the whole node.
bool node_agrees(bool ok, MPI_Comm node) {
    int mine = ok ? 1 : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, node);
    return all == 1;
}

// The rank in `to` of each rank of `from`, in `from`'s order.
std::vector<int> translate_all(MPI_Comm from, MPI_Comm to) {
    int n = 0;
    MPI_Comm_size(from, &n);
    MPI_Group g, tg;
    MPI_Comm_group(from, &g);
    MPI_Comm_group(to, &tg);
    std::vector<int> mine(n), out(n);
    for (int i = 0; i < n; ++i) mine[i] = i;
    MPI_Group_translate_ranks(g, n, mine.data(), tg, out.data());
    MPI_Group_free(&g);
    MPI_Group_free(&tg);
    return out;
}

// Communicator ranks of `group_comm`'s members, ascending.
std::vector<int> ranks_in(MPI_Comm group_comm, MPI_Comm comm) {
    std::vector<int> out = translate_all(group_comm, comm);
    std::sort(out.begin(), out.end());
    return out;
}

// Each rank's node label: the emulated topology's, or the lowest
// communicator rank of its shared-memory node.
Status node_labels(MPI_Comm comm, MPI_Comm machine_node, const std::string &topology, std::vector<int> *labels,
                   int *rails) {
    int p = 0;
    MPI_Comm_size(comm, &p);
    labels->assign(p, 0);
    *rails = 1;
    if (topology.empty()) {
        const int leader = ranks_in(machine_node, comm).front();
        MPI_Allgather(&leader, 1, MPI_INT, labels->data(), 1, MPI_INT, comm);
        return LOOM_SUCCESS;
    }
    int world_size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    NodeMap world;
    if (NodeMap::parse(topology, world_size, &world) != LOOM_SUCCESS)
        return fail(LOOM_ERR_INVALID_PARAMETER_VALUE, std::string(last_error_message()) +
                                                          " (it describes MPI_COMM_WORLD's " +
                                                          std::to_string(world_size) + " ranks)");
    const std::vector<int> in_world = translate_all(comm, MPI_COMM_WORLD);
    for (int r = 0; r < p; ++r) (*labels)[r] = world.node_of[in_world[r]];
    *rails = world.rails;
    return LOOM_SUCCESS;
}

// `node`: the ranks that share memory and (emulated) node with this one.
void attach_shared_memory(MPI_Comm comm, MPI_Comm node, Communicator &c) {
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

}  // namespace

Status setup_nodes_mpi(MPI_Comm comm, Communicator &c) {
    MPI_Comm machine_node;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &machine_node) != MPI_SUCCESS)
        return fail(LOOM_ERR_TRANSPORT, "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
    std::vector<int> labels;
    int rails = 1;
    Status st = node_labels(comm, machine_node, c.config().raw(kParamTopology), &labels, &rails);
    if (st == LOOM_SUCCESS) {
        NodeMap map = NodeMap::from_labels(labels, rails);
        map.emulated = !c.config().raw(kParamTopology).empty();
        st = c.set_nodes(std::move(map));
    }
    if (st == LOOM_SUCCESS && c.config().integer(kParamSharedMemory) != 0) {
        MPI_Comm node;
        MPI_Comm_split(machine_node, labels[c.rank()], c.rank(), &node);
        attach_shared_memory(comm, node, c);
        MPI_Comm_free(&node);
    }
    MPI_Comm_free(&machine_node);
    return st;
}

}  // namespace loom
