// Rabenseifner allreduce: a recursive-halving reduce-scatter then a
// recursive-doubling allgather over the largest power-of-two core, extra ranks
// folded in. 2 log2(core) alpha + 2 (core-1)/core n beta + (core-1)/core n gamma;
// when p is not a power of two the fold adds 2 alpha + 2 n beta + n gamma.
#include "algorithms/algorithm.hpp"
#include "algorithms/phases.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    // The input is read only here, so an in-place call may alias it (see
    // in_place_aliasing_safe); everything after works in the output.
    const Slice vec = output_slice(0, a.count);
    b.copy(vec, input_slice(0, a.count));
    if (a.nranks == 1 || a.count == 0) return;
    // One block per core rank: ranks outside the core hold no block, they
    // hand their vector in and get the result back. Fewer elements than core
    // ranks just leaves some blocks empty.
    const Fold fold(a.nranks);
    const BlockLayout blocks(a.count, static_cast<size_t>(fold.core));
    reduce_scatter_halving(fold, blocks, rank, vec, vec, b);
    allgather_doubling(fold, blocks, rank, vec, b);
}

}  // namespace

extern const AlgorithmInfo kAllreduceRabenseifner = {
    Collective::allreduce,
    "rabenseifner",
    "recursive-halving reduce-scatter then recursive-doubling allgather; for medium and large messages",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/true};

}  // namespace loom
