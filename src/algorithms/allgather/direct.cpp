// Direct allgather: every rank sends its block to every other rank in one
// round. One alpha (the p-1 messages overlap) + (p-1)/p n beta: for small
// blocks among few ranks, above all through shared memory, where a round
// costs more than a message.
#include "algorithms/algorithm.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    const size_t block = a.count;
    auto block_slice = [&](int r) { return output_slice(static_cast<size_t>(r) * block, block); };
    // In place this copies the block onto itself, which the executor skips.
    b.copy(block_slice(rank), input_slice(0, block));
    if (p == 1 || block == 0) return;
    for (int i = 1; i < p; ++i) b.recv((rank - i + p) % p, block_slice((rank - i + p) % p));
    for (int i = 1; i < p; ++i) b.send((rank + i) % p, input_slice(0, block));
}

}  // namespace

extern const AlgorithmInfo kAllgatherDirect = {
    Collective::allgather,
    "direct",
    "one round: every rank sends its block straight to all others; for small blocks on few ranks",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/true};

}  // namespace loom
