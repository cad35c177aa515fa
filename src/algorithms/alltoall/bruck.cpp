// Bruck alltoall: rotate the blocks locally so slot i holds the data for rank
// rank+i; in step k send every slot whose index has bit k set to rank+2^k,
// packed into one message, and take the same slots from rank-2^k; afterwards
// slot i holds the data from rank-i, and an inverse rotation places it.
// ceil(log2 p) alpha + (n/2) ceil(log2 p) beta plus local copies: few
// messages but more bytes, so it suits small blocks.
#include <algorithm>

#include "algorithms/algorithm.hpp"

namespace loom {
namespace {

// Calls f(first, length) for each run of slots in [0, p) whose index has
// `bit` set: [bit, 2 bit), [3 bit, 4 bit), ...
template <typename F>
void for_each_run_with_bit(int p, int bit, F &&f) {
    for (int first = bit; first < p; first += 2 * bit) f(first, std::min(bit, p - first));
}

int slots_with_bit(int p, int bit) {
    int n = 0;
    for_each_run_with_bit(p, bit, [&](int, int length) { n += length; });
    return n;
}

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    const size_t block = a.count;
    auto blocks = [&](int n) { return static_cast<size_t>(n) * block; };
    // Slot 0 (the own block) has no bit set, so it never travels: copy it straight across.
    b.copy(output_slice(blocks(rank), block), input_slice(blocks(rank), block));
    if (p == 1 || block == 0) return;

    int most_moved = 0;
    for (int bit = 1; bit < p; bit *= 2) most_moved = std::max(most_moved, slots_with_bit(p, bit));
    const Slice rotated = b.scratch(blocks(p));  // slot 0 stays unused, to keep slot = distance
    // Separate send and receive buffers: a message never lands in memory being sent.
    const Slice packed = b.scratch(blocks(most_moved));
    const Slice arrived = b.scratch(blocks(most_moved));
    auto slots = [&](const Slice &s, int first, int n) { return s.sub(blocks(first), blocks(n)); };

    // Slot i = input block (rank + i) % p, for slots 1..p-1: two contiguous runs.
    b.copy(slots(rotated, 1, p - rank - 1), input_slice(blocks(rank + 1), blocks(p - rank - 1)));
    b.copy(slots(rotated, p - rank, rank), input_slice(0, blocks(rank)));

    for (int bit = 1; bit < p; bit *= 2) {
        const int moved = slots_with_bit(p, bit);
        int at = 0;
        for_each_run_with_bit(p, bit, [&](int first, int length) {
            b.copy(slots(packed, at, length), slots(rotated, first, length));
            at += length;
        });
        b.send((rank + bit) % p, slots(packed, 0, moved));
        b.recv((rank - bit + p) % p, slots(arrived, 0, moved));
        at = 0;
        for_each_run_with_bit(p, bit, [&](int first, int length) {
            b.copy(slots(rotated, first, length), slots(arrived, at, length));
            at += length;
        });
    }

    // Slot i now holds the block from rank (rank - i) % p: reversed order, so one copy per block.
    for (int i = 1; i < p; ++i) b.copy(output_slice(blocks((rank - i + p) % p), block), slots(rotated, i, 1));
}

}  // namespace

extern const AlgorithmInfo kAlltoallBruck = {
    Collective::alltoall,
    "bruck",
    "ceil(log2 p) steps, each sending the packed blocks whose rotated index has one bit set; for small blocks",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
