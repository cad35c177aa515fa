// Scattered alltoall: every rank posts receives and sends to all peers without
// waiting between them, in the staggered order rank+i so no rank is everyone's
// first target, keeping at most max_outstanding exchanges in flight. (p-1)
// alpha, overlapped up to the window, + (p-1)/p n beta: for medium blocks.
// Where the plan says so (ring_piece_bytes) each block goes in pieces, so
// blocks above one ring message still take the shared-memory rings.
#include <algorithm>
#include <vector>

#include "algorithms/algorithm.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    const size_t block = a.count;
    auto at = [&](int r) { return static_cast<size_t>(r) * block; };
    b.copy(output_slice(at(rank), block), input_slice(at(rank), block));
    if (p == 1 || block == 0) return;
    const size_t window = static_cast<size_t>(std::max(1, b.knobs().max_outstanding));
    const size_t piece_bytes = b.knobs().ring_piece_bytes;
    const size_t piece = piece_bytes ? std::max<size_t>(1, piece_bytes / a.elem_size) : block;

    // exchanges[i] = the receives and sends of exchange i, which may start once
    // exchange i - window has completed: each of the `window` chains has one
    // exchange in flight. Exchange i pairs with exchange i on both peers, so
    // waits only ever point to lower indices and cannot form a cycle.
    std::vector<std::vector<StepId>> exchanges;
    for (int i = 1; i < p; ++i) {
        const int to = (rank + i) % p, from = (rank - i + p) % p;
        const size_t index = exchanges.size();
        const std::vector<StepId> gate = index >= window ? exchanges[index - window] : std::vector<StepId>{};
        std::vector<StepId> steps;
        for (size_t off = 0; off < block; off += piece) {
            const size_t n = std::min(piece, block - off);
            steps.push_back(b.recv(from, output_slice(at(from) + off, n), gate));
            steps.push_back(b.send(to, input_slice(at(to) + off, n), gate));
        }
        exchanges.push_back(std::move(steps));
    }
}

}  // namespace

extern const AlgorithmInfo kAlltoallScattered = {
    Collective::alltoall,
    "scattered",
    "posts receives and sends to all peers in staggered order, at most max_outstanding in flight; for medium blocks",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
