// Recursive doubling allgather: in step k each rank swaps everything it holds
// (2^k contiguous blocks) with the rank whose number differs in bit k, so the
// gathered region doubles each step. log2(p) alpha + (p-1)/p n beta; needs a
// power-of-two communicator so that every rank has a partner in every step.
#include <string>

#include "algorithms/algorithm.hpp"
#include "algorithms/fold.hpp"

namespace loom {
namespace {

std::string not_applicable(const CollArgs &a) {
    if (!is_power_of_two(a.nranks))
        return "needs a power-of-two communicator size (got " + std::to_string(a.nranks) + ")";
    return {};
}

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    const size_t block = a.count;
    auto blocks_slice = [&](int first, int n) {
        return output_slice(static_cast<size_t>(first) * block, static_cast<size_t>(n) * block);
    };
    // In place this copies the block onto itself, which the executor skips.
    b.copy(blocks_slice(rank, 1), input_slice(0, block));
    if (p == 1 || block == 0) return;

    for (int held = 1; held < p; held *= 2) {
        const int partner = rank ^ held;
        // Both sides hold the `held` blocks of their aligned group; the two groups are disjoint,
        // so the receive never lands in what is being sent.
        const int mine = rank & ~(held - 1), theirs = partner & ~(held - 1);
        // The first step sends straight from the input so it need not wait for the copy.
        b.send(partner, held == 1 ? input_slice(0, block) : blocks_slice(mine, held));
        b.recv(partner, blocks_slice(theirs, held));
    }
}

}  // namespace

extern const AlgorithmInfo kAllgatherRecursiveDoubling = {
    Collective::allgather,
    "recursive_doubling",
    "pairwise exchanges at doubling distances, log2(p) steps; good latency for small and medium messages",
    "power-of-two communicator size",
    not_applicable,
    build,
    /*in_place_aliasing_safe=*/true};

}  // namespace loom
