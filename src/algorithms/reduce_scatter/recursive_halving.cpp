// Recursive-halving reduce-scatter: the core (largest power of two <= p) halves
// the vector log2(core) times, each rank keeping the half holding its blocks.
// log2(core) alpha + (core-1)/core n beta + (core-1)/core n gamma; when p is
// not a power of two, the fold adds 2 alpha + n beta + n gamma (n/p beta back).
#include "algorithms/algorithm.hpp"
#include "algorithms/phases.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const BlockLayout blocks = reduce_scatter_blocks(a);
    const Slice result = output_slice(0, blocks.count(rank));
    const Slice contribution = input_slice(0, blocks.total());
    if (a.nranks == 1) {
        b.copy(result, contribution);
        return;
    }
    // The output holds only this rank's block, so partial sums live in
    // scratch; the halving reads the input directly and fills the scratch as
    // it goes. Ranks outside the core only send their input and get a block.
    const Fold fold(a.nranks);
    const Slice work = fold.in_core(rank) ? b.scratch(blocks.total()) : Slice{};
    reduce_scatter_halving(fold, blocks, rank, contribution, work, b);
    deliver_own_blocks(fold, blocks, rank, work, result, b);
}

}  // namespace

extern const AlgorithmInfo kReduceScatterRecursiveHalving = {
    Collective::reduce_scatter,
    "recursive_halving",
    "recursive halving over the largest power-of-two core, extra ranks folded in; few rounds, for small and medium messages",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/false};

extern const AlgorithmInfo kReduceScatterBlockRecursiveHalving = {
    Collective::reduce_scatter_block,
    "recursive_halving",
    "recursive halving over the largest power-of-two core, extra ranks folded in; few rounds, for small and medium messages",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
