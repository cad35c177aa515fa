// Scattered alltoallv: every rank posts its receives and sends to all peers
// without waiting between them, in the staggered order rank+i so no rank is
// everyone's first target, at most max_outstanding exchanges in flight. For
// small and medium exchanges. Where the plan says so (ring_piece_bytes) a
// block goes in pieces, so blocks above one ring message still take the
// shared-memory rings.
#include <algorithm>
#include <vector>

#include "algorithms/algorithm.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    b.copy(received_block(a, rank), sent_block(a, rank));
    if (p == 1) return;
    const size_t window = static_cast<size_t>(std::max(1, b.knobs().max_outstanding));
    const size_t piece_bytes = b.knobs().ring_piece_bytes;
    const size_t piece = piece_bytes ? std::max<size_t>(1, piece_bytes / a.elem_size) : SIZE_MAX;

    // exchanges[i]: exchange i's steps, which may start once exchange
    // i - window has completed. Exchange i pairs with exchange i on both
    // peers, so waits point only to lower indices and cannot form a cycle.
    std::vector<std::vector<StepId>> exchanges;
    for (int i = 1; i < p; ++i) {
        const int to = (rank + i) % p, from = (rank - i + p) % p;
        const size_t index = exchanges.size();
        const std::vector<StepId> gate = index >= window ? exchanges[index - window] : std::vector<StepId>{};
        const Slice in = received_block(a, from), out = sent_block(a, to);
        std::vector<StepId> steps;
        // Both sides cut a block alike: the receiver's count is the sender's.
        for (size_t off = 0; off < in.count; off += piece)
            steps.push_back(b.recv(from, in.sub(off, std::min(piece, in.count - off)), gate));
        for (size_t off = 0; off < out.count; off += piece)
            steps.push_back(b.send(to, out.sub(off, std::min(piece, out.count - off)), gate));
        if (steps.empty()) steps.push_back(b.join(gate));  // keeps the window's chain unbroken
        exchanges.push_back(std::move(steps));
    }
}

}  // namespace

extern const AlgorithmInfo kAlltoallvScattered = {
    Collective::alltoallv,
    "scattered",
    "posts receives and sends to all peers in staggered order, at most max_outstanding in flight; for small and "
    "medium exchanges",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
