// Node slots: the node-aware leader algorithms with their node phases on the
// shared slots instead of messages. A call takes two slot generations. In
// the first, every rank but its node's leader (local rank 0) publishes its
// input; the leader combines the node's inputs (reductions: added in local
// order; allgather: the node's blocks in local order). The leaders then run
// the plan built here: an allreduce of the node sums (allreduce,
// reduce_scatter, reduce_scatter_block) or a direct exchange of the node's
// blocks (allgather), into the leader's own slot. In the second generation
// the leader publishes that result and each rank copies its part of it.
// The plan is the leaders' exchange alone (other ranks' programs are empty);
// runtime/node_slot_call.cpp runs the slot phases around it. For small
// inputs across nodes: one message per leader pair or one small allreduce
// among leaders, and no message within a node.
#include "algorithms/compose.hpp"

namespace loom {
namespace {

std::string not_applicable(const CollArgs &a) {
    if (a.memory != MemoryType::host) return "host memory only";
    const std::string map = needs_node_map(a);
    if (!map.empty()) return map;
    if (a.nodes->nodes() < 2) return "two nodes or more (on one node: shared_slots)";
    if (!a.node_slots) return "every node's ranks must share Loom's shared memory";
    const size_t in = a.input_count() * a.elem_size, out = node_slots_result_count(a) * a.elem_size;
    if (in > kSharedSlotsCapacity || out > kSharedSlotsCapacity)
        return "a rank's input (" + std::to_string(in) + " bytes) and the node's result (" + std::to_string(out) +
               " bytes) must fit the slots' " + std::to_string(kSharedSlotsCapacity);
    return {};
}

std::vector<int> leaders_of(const NodeMap &m) {
    std::vector<int> leaders;
    for (int node = 0; node < m.nodes(); ++node) leaders.push_back(m.members[node][0]);
    return leaders;
}

// Input: the node's sum; output: the sum of all nodes' sums.
void build_reduction(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeView v(a, rank);
    if (v.local != 0) return;
    const size_t n = a.input_count();
    build_sub_collective(b, sub_args(a, Collective::allreduce, v.map.nodes(), n, false), leaders_of(v.map), v.node,
                         input_slice(0, n), output_slice(0, n));
}

// Input: the node's blocks in local order; output: every rank's block at
// its rank's place. Each leader sends its node's blocks to every other
// leader in one message.
void build_allgather(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeView v(a, rank);
    if (v.local != 0) return;
    const NodeMap &m = v.map;
    const size_t n = a.count;
    auto place = [&](int node, const Slice &blocks) {
        for (size_t j = 0; j < m.members[node].size(); ++j)
            b.copy(output_slice(static_cast<size_t>(m.members[node][j]) * n, n), blocks.sub(j * n, n));
    };
    place(v.node, input_slice(0, static_cast<size_t>(v.k) * n));
    for (int i = 1; i < m.nodes(); ++i) {
        const int to = (v.node + i) % m.nodes(), from = (v.node - i + m.nodes()) % m.nodes();
        b.send(m.members[to][0], input_slice(0, static_cast<size_t>(v.k) * n));
        const Slice landing = b.scratch(static_cast<size_t>(m.ranks_on(from)) * n);
        b.recv(m.members[from][0], landing);
        place(from, landing);
    }
}

constexpr const char *kRestrictions =
    "two nodes or more, each node's ranks on Loom's shared memory; a rank's input and the node's result at "
    "most 32 KiB; host memory";

}  // namespace

extern const AlgorithmInfo kAllreduceNodeSlots = {
    Collective::allreduce, "node_slots",
    "each node adds its vectors on the shared slots, the node leaders allreduce the sums, each node reads the "
    "result from its leader's slot; for small vectors across nodes",
    kRestrictions, not_applicable, build_reduction, false, CallPath::node_slots};
extern const AlgorithmInfo kReduceScatterNodeSlots = {
    Collective::reduce_scatter, "node_slots",
    "each node adds its inputs on the shared slots, the node leaders allreduce the sums, each rank reads its "
    "block from its leader's slot; for small inputs across nodes",
    kRestrictions, not_applicable, build_reduction, false, CallPath::node_slots};
extern const AlgorithmInfo kReduceScatterBlockNodeSlots = {
    Collective::reduce_scatter_block, "node_slots",
    "each node adds its inputs on the shared slots, the node leaders allreduce the sums, each rank reads its "
    "block from its leader's slot; for small inputs across nodes",
    kRestrictions, not_applicable, build_reduction, false, CallPath::node_slots};
extern const AlgorithmInfo kAllgatherNodeSlots = {
    Collective::allgather, "node_slots",
    "each node's leader collects its node's blocks from the shared slots, sends them to every other leader in "
    "one message, and its node reads the whole output from its slot; for small blocks across nodes",
    kRestrictions, not_applicable, build_allgather, false, CallPath::node_slots};

size_t node_slots_result_count(const CollArgs &a) {
    return a.collective == Collective::allgather ? a.count * static_cast<size_t>(a.nranks) : a.input_count();
}

const AlgorithmInfo *node_slots_algorithm(Collective c) {
    switch (c) {
        case Collective::allreduce: return &kAllreduceNodeSlots;
        case Collective::reduce_scatter: return &kReduceScatterNodeSlots;
        case Collective::reduce_scatter_block: return &kReduceScatterBlockNodeSlots;
        case Collective::allgather: return &kAllgatherNodeSlots;
        case Collective::alltoall:
        case Collective::alltoallv:
        case Collective::allgatherv: return nullptr;
    }
    return nullptr;
}

}  // namespace loom
