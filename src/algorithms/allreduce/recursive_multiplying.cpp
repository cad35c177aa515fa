// Recursive multiplying allreduce (radix-k generalisation of recursive
// doubling): log_k(p) rounds, in each every rank exchanges its vector with the
// k-1 ranks that differ from it in one base-k digit. log_k p alpha with k-1
// messages in flight per round: fewer rounds than doubling when the network
// takes several concurrent messages well.
#include <algorithm>

#include "algorithms/algorithm.hpp"
#include "algorithms/phases.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    allreduce_by_digit_exchange(a, rank, std::max(2, std::min(b.knobs().radix, a.nranks)), b);
}

}  // namespace

extern const AlgorithmInfo kAllreduceRecursiveMultiplying = {
    Collective::allreduce,
    "recursive_multiplying",
    "radix-k recursive doubling (k = parameter knomial_radix): log_k(p) rounds of k-1 concurrent exchanges",
    "none (sizes that are not a power of k fold the extra ranks onto the core)",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/true};

}  // namespace loom
