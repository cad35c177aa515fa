// Recursive doubling allreduce: log2(p) rounds; in round k each rank swaps its
// whole vector with rank XOR 2^k and reduces. lg p alpha + n lg p beta: the
// latency-optimal choice for small messages. Ranks beyond the largest power of
// two hand their vector to a core rank first and get the result back.
#include "algorithms/algorithm.hpp"
#include "algorithms/phases.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) { allreduce_by_digit_exchange(a, rank, 2, b); }

}  // namespace

extern const AlgorithmInfo kAllreduceRecursiveDoubling = {
    Collective::allreduce,
    "recursive_doubling",
    "log2(p) pairwise exchanges of the whole vector; latency-optimal for small messages",
    "none (non-power-of-two sizes fold the extra ranks onto the core)",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/true};

}  // namespace loom
