// Direct allgatherv: every rank sends its block to every other rank in one
// round, straight into its place. One round (the p-1 messages overlap): for
// small totals among few ranks, above all through shared memory, where a
// round costs more than a message.
#include "algorithms/algorithm.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    // In place this copies the block onto itself, which the executor skips.
    b.copy(received_block(a, rank), input_slice(0, a.count));
    for (int i = 1; i < p; ++i) b.recv((rank - i + p) % p, received_block(a, (rank - i + p) % p));
    for (int i = 1; i < p; ++i) b.send((rank + i) % p, input_slice(0, a.count));
}

}  // namespace

extern const AlgorithmInfo kAllgathervDirect = {
    Collective::allgatherv,
    "direct",
    "one round: every rank sends its block straight to all others; for small totals on few ranks",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/true};

}  // namespace loom
