// Set-up for communicators made from an MPI communicator (loom_comm_create).
// Which ranks share a node comes from MPI_Comm_split_type, or from the
// emulated topology parameter (declared for MPI_COMM_WORLD's ranks, so
// sub-communicators inherit it).
#include "runtime/setup_mpi.hpp"

#include <algorithm>

#include "core/params.hpp"
#include "transport/registry.hpp"

namespace loom {
namespace {

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
    const std::vector<int> in_world = translate_ranks(comm, MPI_COMM_WORLD);
    for (int r = 0; r < p; ++r) (*labels)[r] = world.node_of[in_world[r]];
    *rails = world.rails;
    return LOOM_SUCCESS;
}

}  // namespace

Status setup_communicator_mpi(MPI_Comm comm, Communicator &c) {
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
    if (st == LOOM_SUCCESS) {
        MpiSetup setup{comm, MPI_COMM_NULL};
        MPI_Comm_split(machine_node, labels[c.rank()], c.rank(), &setup.node);
        for (const TransportSetup &t : transport_setups()) t.set_up(setup, c);
        MPI_Comm_free(&setup.node);
        // A node whose shared memory failed has no slots: then no node
        // takes the node_slots algorithms, as selection must agree everywhere.
        if (c.nodes().nodes() > 1) {
            int ready = c.node_slots_ready() ? 1 : 0, everywhere = 0;
            MPI_Allreduce(&ready, &everywhere, 1, MPI_INT, MPI_MIN, comm);
            if (!everywhere) c.forbid_node_slots();
        }
    }
    MPI_Comm_free(&machine_node);
    return st;
}

}  // namespace loom
