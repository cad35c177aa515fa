// Bruck allgatherv: blocks are gathered into scratch in rotated order (slot i
// holds rank (rank+i)%p's block, each as long as that rank's count); in step
// k each rank sends its first min(2^k, p-2^k) slots to rank-2^k and receives
// as many from rank+2^k, then each slot is copied to its displacement.
// ceil(log2 p) rounds whatever p: for small totals.
#include <algorithm>
#include <vector>

#include "algorithms/algorithm.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    auto owner = [&](int slot) { return (rank + slot) % p; };
    // In place this copies the block onto itself, which the executor skips.
    b.copy(received_block(a, rank), input_slice(0, a.count));
    if (p == 1) return;
    std::vector<size_t> rotated_counts(static_cast<size_t>(p));
    for (int i = 0; i < p; ++i) rotated_counts[i] = a.recv_counts[owner(i)];
    const BlockLayout layout(rotated_counts);
    const Slice rotated = b.scratch(layout.total());
    auto slots = [&](int first, int n) { return rotated.sub(layout.offset(first), layout.span(first, n)); };
    b.copy(slots(0, 1), input_slice(0, a.count));

    for (int have = 1; have < p; have *= 2) {
        const int n = std::min(have, p - have);
        // Slots [0, have) are sent, slots [have, have + n) received: never the same memory.
        // The first step sends straight from the input so it need not wait for the copy.
        b.send((rank - have + p) % p, have == 1 ? input_slice(0, a.count) : slots(0, n));
        b.recv((rank + have) % p, slots(have, n));
    }
    for (int i = 1; i < p; ++i) b.copy(received_block(a, owner(i)), slots(i, 1));
}

}  // namespace

extern const AlgorithmInfo kAllgathervBruck = {
    Collective::allgatherv,
    "bruck",
    "ceil(log2 p) steps at doubling distances into a rotated scratch copy, then each block to its place; log "
    "latency for small totals",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/true};

}  // namespace loom
