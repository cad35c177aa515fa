// Node slots: the node-aware algorithms with their node phases on the
// shared slots instead of messages. Every rank but those the plan below
// leaves out publishes its input in its node's slots, and the node's
// inputs are combined from there (reductions: added in local order;
// allgather: the node's blocks side by side). Then:
//  - on nodes of equal size, every rank combines them and exchanges the
//    combination with the ranks of the same local index on the other
//    nodes (an allreduce of the node sums, or one message to each with the
//    node's blocks): one slot round and one network round;
//  - otherwise only the node's leader (local rank 0) combines and
//    exchanges, and publishes the result in a second slot round, from
//    which the node's other ranks copy their part.
// The plan built here is that exchange alone (a rank outside it has an
// empty program); runtime/node_slot_call.cpp runs the slot phases around
// it. Every group of same-index ranks runs the same plan shape over the
// same node sums, so every rank gets the same bits. For small inputs
// across nodes: no message within a node.
#include "algorithms/compose.hpp"

namespace loom {
namespace {

// Elements a leader publishes for the node: the whole reduced vector
// (every rank's block of a reduce_scatter among them) or the whole output.
size_t result_count(const CollArgs &a) {
    return a.collective == Collective::allgather ? a.count * static_cast<size_t>(a.nranks) : a.input_count();
}

std::string not_applicable(const CollArgs &a) {
    if (a.memory != MemoryType::host) return "host memory only";
    const std::string map = needs_node_map(a);
    if (!map.empty()) return map;
    if (a.nodes->nodes() < 2) return "two nodes or more (on one node: shared_slots)";
    if (!a.node_slots) return "every node's ranks must share Loom's shared memory";
    const size_t in = a.input_count() * a.elem_size, out = result_count(a) * a.elem_size;
    if (in > kSharedSlotsCapacity || out > kSharedSlotsCapacity)
        return "a rank's input (" + std::to_string(in) + " bytes) and the node's result (" + std::to_string(out) +
               " bytes) must fit the slots' " + std::to_string(kSharedSlotsCapacity);
    return {};
}

// The ranks that exchange with this one, by node: those of its local
// index (nodes of equal size), else the leaders; empty when this rank
// takes no part.
std::vector<int> exchange_group(const CollArgs &a, const NodeView &v) {
    const int index = a.nodes->uniform() ? v.local : 0;
    if (v.local != index) return {};
    std::vector<int> group;
    for (int node = 0; node < v.map.nodes(); ++node) group.push_back(v.map.members[node][index]);
    return group;
}

// Input: the node's sum; output: the sum of all nodes' sums.
void build_reduction(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeView v(a, rank);
    const std::vector<int> group = exchange_group(a, v);
    if (group.empty()) return;
    const size_t n = a.input_count();
    build_sub_collective(b, sub_args(a, Collective::allreduce, v.map.nodes(), n, false), group, v.node,
                         input_slice(0, n), output_slice(0, n));
}

// Input: the node's blocks in local order; output: every rank's block at
// its rank's place. Each rank of the group sends its node's blocks to every
// other in one message.
void build_allgather(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeView v(a, rank);
    const std::vector<int> group = exchange_group(a, v);
    if (group.empty()) return;
    const NodeMap &m = v.map;
    const size_t n = a.count;
    auto place = [&](int node, const Slice &blocks) {
        for (size_t j = 0; j < m.members[node].size(); ++j)
            b.copy(output_slice(static_cast<size_t>(m.members[node][j]) * n, n), blocks.sub(j * n, n));
    };
    place(v.node, input_slice(0, static_cast<size_t>(v.k) * n));
    for (int i = 1; i < m.nodes(); ++i) {
        const int to = (v.node + i) % m.nodes(), from = (v.node - i + m.nodes()) % m.nodes();
        b.send(group[to], input_slice(0, static_cast<size_t>(v.k) * n));
        const Slice landing = b.scratch(static_cast<size_t>(m.ranks_on(from)) * n);
        b.recv(group[from], landing);
        place(from, landing);
    }
}

constexpr const char *kRestrictions =
    "two nodes or more, each node's ranks on Loom's shared memory; a rank's input and the result at most "
    "32 KiB; host memory";

}  // namespace

extern const AlgorithmInfo kAllreduceNodeSlots = {
    Collective::allreduce, "node_slots",
    "each node adds its vectors on the shared slots, then the ranks of each local index (uneven nodes: the "
    "leaders, whose nodes read the result from their slots) allreduce the node sums; for small vectors across nodes",
    kRestrictions, not_applicable, build_reduction, false, false, true};
extern const AlgorithmInfo kReduceScatterNodeSlots = {
    Collective::reduce_scatter, "node_slots",
    "each node adds its inputs on the shared slots, then the ranks of each local index (uneven nodes: the "
    "leaders, whose nodes read their blocks from their slots) allreduce the node sums; for small inputs across nodes",
    kRestrictions, not_applicable, build_reduction, false, false, true};
extern const AlgorithmInfo kReduceScatterBlockNodeSlots = {
    Collective::reduce_scatter_block, "node_slots",
    "each node adds its inputs on the shared slots, then the ranks of each local index (uneven nodes: the "
    "leaders, whose nodes read their blocks from their slots) allreduce the node sums; for small inputs across nodes",
    kRestrictions, not_applicable, build_reduction, false, false, true};
extern const AlgorithmInfo kAllgatherNodeSlots = {
    Collective::allgather, "node_slots",
    "each node's blocks are read from the shared slots and sent in one message by each rank to the rank of its "
    "local index on every other node (uneven nodes: by the leaders, whose nodes read the output from their "
    "slots); for small blocks across nodes",
    kRestrictions, not_applicable, build_allgather, false, false, true};

const AlgorithmInfo *node_slots_algorithm(Collective c) {
    switch (c) {
        case Collective::allreduce: return &kAllreduceNodeSlots;
        case Collective::reduce_scatter: return &kReduceScatterNodeSlots;
        case Collective::reduce_scatter_block: return &kReduceScatterBlockNodeSlots;
        case Collective::allgather: return &kAllgatherNodeSlots;
        case Collective::alltoall: return nullptr;
    }
    return nullptr;
}

}  // namespace loom
