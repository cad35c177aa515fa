// Pairwise alltoall: p-1 exchange steps; in step s each rank sends one block
// to one peer and receives one block from another (partner rank XOR s when p
// is a power of two, else rank+s and rank-s), plus a local copy of its own
// block. (p-1) alpha + (p-1)/p n beta, one message in flight each way: for
// large blocks, where flooding the network with all messages at once hurts.
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/fold.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    const size_t block = a.count;
    auto at = [&](int r) { return static_cast<size_t>(r) * block; };
    b.copy(output_slice(at(rank), block), input_slice(at(rank), block));
    if (p == 1 || block == 0) return;
    const bool xor_partners = is_power_of_two(p);

    std::vector<StepId> previous_step;
    for (int s = 1; s < p; ++s) {
        const int to = xor_partners ? rank ^ s : (rank + s) % p;
        const int from = xor_partners ? rank ^ s : (rank - s + p) % p;
        // The blocks touch disjoint memory, so nothing would order the steps: the
        // explicit dependency keeps one exchange in flight, as the algorithm intends.
        const StepId received = b.recv(from, output_slice(at(from), block), previous_step);
        const StepId sent = b.send(to, input_slice(at(to), block), previous_step);
        previous_step = {received, sent};
    }
}

}  // namespace

extern const AlgorithmInfo kAlltoallPairwise = {
    Collective::alltoall,
    "pairwise",
    "p-1 steps, each exchanging one block with one peer; keeps the network uncongested for large blocks",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
