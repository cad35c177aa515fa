// Recursive multiplying allreduce (radix-k generalisation of recursive
// doubling): log_k(p) rounds, in each every rank exchanges its vector with the
// k-1 ranks that differ from it in one base-k digit. log_k p alpha with k-1
// messages in flight per round: fewer rounds than doubling when the network
// takes several concurrent messages well.
#include <algorithm>

#include "algorithm.hpp"
#include "fold.hpp"

namespace loom {
namespace {

int effective_radix(const CollArgs &a) { return std::max(2, std::min(a.radix, a.nranks)); }

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const Slice result = output_slice(0, a.count);
    b.copy(result, input_slice(0, a.count));
    if (a.nranks == 1 || a.count == 0) return;
    const int radix = effective_radix(a);
    const Fold fold(a.nranks, radix);
    if (!fold.in_core(rank)) {
        b.send(fold.carrier(rank), result);
        b.recv(fold.carrier(rank), result);
        return;
    }
    const std::vector<int> carried = fold.carried(rank);
    std::vector<Slice> incoming;
    for (int i = 0; i < std::max<int>(radix - 1, static_cast<int>(carried.size())); ++i)
        incoming.push_back(b.scratch(a.count));
    for (size_t i = 0; i < carried.size(); ++i) b.recv(carried[i], incoming[i]);
    for (size_t i = 0; i < carried.size(); ++i) b.reduce(result, incoming[i]);
    for (int stride = 1; stride < fold.core; stride *= radix) {
        const int digit = (rank / stride) % radix;
        std::vector<int> peers;
        for (int j = 1; j < radix; ++j) peers.push_back(rank + (((digit + j) % radix) - digit) * stride);
        // All sends and receives of the round go out before any reduction, so
        // the k-1 exchanges overlap.
        for (int j = 0; j < radix - 1; ++j) b.send(peers[j], result);
        for (int j = 0; j < radix - 1; ++j) b.recv(peers[j], incoming[j]);
        for (int j = 0; j < radix - 1; ++j) b.reduce(result, incoming[j]);
    }
    for (int extra : carried) b.send(extra, result);
}

}  // namespace

extern const AlgorithmInfo kAllreduceRecursiveMultiplying = {
    Collective::allreduce, "recursive_multiplying",
    "radix-k recursive doubling (k = parameter knomial_radix): log_k(p) rounds of k-1 concurrent exchanges",
    "none (sizes that are not a power of k fold the extra ranks onto the core)", always_applicable, build,
    /*in_place_aliasing_safe=*/true};

}  // namespace loom
