// Recursive doubling allreduce: log2(p) rounds; in round k each rank swaps its
// whole vector with rank XOR 2^k and reduces. lg p alpha + n lg p beta: the
// latency-optimal choice for small messages. Ranks beyond the largest power of
// two hand their vector to a core rank first and get the result back.
#include "algorithm.hpp"
#include "fold.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const Slice result = output_slice(0, a.count);
    b.copy(result, input_slice(0, a.count));
    if (a.nranks == 1 || a.count == 0) return;
    const Fold fold(a.nranks, 2);
    if (!fold.in_core(rank)) {
        b.send(fold.carrier(rank), result);
        b.recv(fold.carrier(rank), result);
        return;
    }
    const Slice incoming = b.scratch(a.count);
    const std::vector<int> carried = fold.carried(rank);
    for (int extra : carried) {
        b.recv(extra, incoming);
        b.reduce(result, incoming);
    }
    for (int mask = 1; mask < fold.core; mask <<= 1) {
        const int partner = rank ^ mask;
        b.send(partner, result);
        b.recv(partner, incoming);  // scratch, so the exchange never waits on itself
        b.reduce(result, incoming);
    }
    for (int extra : carried) b.send(extra, result);
}

}  // namespace

extern const AlgorithmInfo kAllreduceRecursiveDoubling = {
    Collective::allreduce, "recursive_doubling",
    "log2(p) pairwise exchanges of the whole vector; latency-optimal for small messages",
    "none (non-power-of-two sizes fold the extra ranks onto the core)", always_applicable, build,
    /*in_place_aliasing_safe=*/true};

}  // namespace loom
