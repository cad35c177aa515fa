// Bruck allgather: blocks are gathered into scratch in rotated order (slot i
// holds rank (rank+i)%p's block); in step k each rank sends its first
// min(2^k, p-2^k) slots to rank-2^k and receives as many from rank+2^k, then a
// final rotation puts them in place. ceil(log2 p) alpha + (p-1)/p n beta plus
// a local copy of n: log-latency for any communicator size.
#include <algorithm>

#include "algorithms/algorithm.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    const size_t block = a.count;
    // In place this copies the block onto itself, which the executor skips.
    b.copy(output_slice(static_cast<size_t>(rank) * block, block), input_slice(0, block));
    if (p == 1 || block == 0) return;
    const Slice rotated = b.scratch(static_cast<size_t>(p) * block);
    auto slots = [&](int first, int n) {
        return rotated.sub(static_cast<size_t>(first) * block, static_cast<size_t>(n) * block);
    };
    b.copy(slots(0, 1), input_slice(0, block));

    for (int have = 1; have < p; have *= 2) {
        const int n = std::min(have, p - have);
        // Slots [0, have) are sent, slots [have, have + n) received: never the same memory.
        // The first step sends straight from the input so it need not wait for the copy.
        b.send((rank - have + p) % p, have == 1 ? input_slice(0, block) : slots(0, n));
        b.recv((rank + have) % p, slots(have, n));
    }

    // Slot i belongs at output block (rank + i) % p: two contiguous runs, skipping
    // slot 0, which the first copy already placed (and which in place is the input).
    const int to_end = p - rank;  // slots [0, to_end) map to blocks [rank, p)
    b.copy(output_slice(static_cast<size_t>(rank + 1) * block, static_cast<size_t>(to_end - 1) * block),
           slots(1, to_end - 1));
    b.copy(output_slice(0, static_cast<size_t>(rank) * block), slots(to_end, rank));
}

}  // namespace

extern const AlgorithmInfo kAllgatherBruck = {
    Collective::allgather,
    "bruck",
    "ceil(log2 p) steps at doubling distances into a rotated scratch copy; log latency for any communicator size",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/true};

}  // namespace loom
