// Direct allreduce: every rank sends its whole vector to every other rank in
// one round and adds up all p vectors itself, in rank order, so every rank
// computes the same expression and gets the same bits. One alpha (the p-1
// messages overlap) + (p-1) n beta + (p-1) n gamma, (p-1) n scratch: for
// small vectors among few ranks, above all through shared memory, where a
// message costs little and a round (a wait) is what hurts.
#include "algorithms/algorithm.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    const size_t n = a.count;
    const Slice result = output_slice(0, n);
    if (p == 1 || n == 0) {
        b.copy(result, input_slice(0, n));
        return;
    }
    // landing[j]: rank j's vector. Receives first, then sends, both in the
    // staggered order rank -/+ i, so no rank is everyone's first target.
    std::vector<Slice> landing(p);
    for (int i = 1; i < p; ++i) {
        const int from = (rank - i + p) % p;
        landing[from] = b.scratch(n);
        b.recv(from, landing[from]);
    }
    for (int i = 1; i < p; ++i) b.send((rank + i) % p, input_slice(0, n));
    landing[rank] = input_slice(0, n);
    b.copy(result, landing[0]);
    for (int j = 1; j < p; ++j) b.reduce(result, landing[j]);
}

}  // namespace

extern const AlgorithmInfo kAllreduceDirect = {
    Collective::allreduce,
    "direct",
    "one round: every rank sends its vector to all others and reduces all p in rank order; for small vectors on few ranks",
    "none (scratch of (p-1) vectors)",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
