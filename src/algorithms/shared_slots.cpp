// Shared slots, for every collective: each rank writes its whole input into
// its slot in shared memory and publishes a generation; every rank then
// reads the slots it needs in place (allreduce: all p vectors, added in
// rank order so every rank gets the same bits; reduce_scatter: its block of
// each; allgather: each; alltoall: its block of each). One synchronisation,
// no messages, no matching. Not a plan: runtime/slot_call.cpp runs it over
// transport/shm/slots.hpp. For small contributions among the ranks of one
// node, where a message's fixed cost is what a call pays.
#include "algorithms/algorithm.hpp"

namespace loom {
namespace {

std::string not_applicable(const CollArgs &a) {
    if (a.memory != MemoryType::host) return "host memory only";
    if (a.nranks == 1) return {};
    if (!a.single_node) return "every rank must be on one node and share Loom's shared memory";
    const size_t bytes = a.input_count() * a.elem_size;
    if (bytes > kSharedSlotsCapacity)
        return "a rank's input of " + std::to_string(bytes) + " bytes is above the slots' " +
               std::to_string(kSharedSlotsCapacity);
    return {};
}

constexpr const char *kRestrictions =
    "one node with Loom's shared memory (or one rank); a rank's input at most 32 KiB; host memory";

}  // namespace

extern const AlgorithmInfo kAllreduceSharedSlots = {
    Collective::allreduce, "shared_slots",
    "every rank publishes its vector in shared memory and adds up all p in place, in rank order; no messages",
    kRestrictions, not_applicable, nullptr, true, CallPath::shared_slots};
extern const AlgorithmInfo kReduceScatterSharedSlots = {
    Collective::reduce_scatter, "shared_slots",
    "every rank publishes its input in shared memory and adds up its block of all p in place; no messages",
    kRestrictions, not_applicable, nullptr, true, CallPath::shared_slots};
extern const AlgorithmInfo kReduceScatterBlockSharedSlots = {
    Collective::reduce_scatter_block, "shared_slots",
    "every rank publishes its input in shared memory and adds up its block of all p in place; no messages",
    kRestrictions, not_applicable, nullptr, true, CallPath::shared_slots};
extern const AlgorithmInfo kAllgatherSharedSlots = {
    Collective::allgather, "shared_slots",
    "every rank publishes its block in shared memory and copies all p from there; no messages",
    kRestrictions, not_applicable, nullptr, true, CallPath::shared_slots};
extern const AlgorithmInfo kAlltoallSharedSlots = {
    Collective::alltoall, "shared_slots",
    "every rank publishes its send buffer in shared memory and copies its block of each from there; no messages",
    kRestrictions, not_applicable, nullptr, true, CallPath::shared_slots};

const AlgorithmInfo *shared_slots_algorithm(Collective c) {
    switch (c) {
        case Collective::allreduce: return &kAllreduceSharedSlots;
        case Collective::reduce_scatter: return &kReduceScatterSharedSlots;
        case Collective::reduce_scatter_block: return &kReduceScatterBlockSharedSlots;
        case Collective::allgather: return &kAllgatherSharedSlots;
        case Collective::alltoall: return &kAlltoallSharedSlots;
        case Collective::alltoallv:
        case Collective::allgatherv: return nullptr;
    }
    return nullptr;
}

}  // namespace loom
