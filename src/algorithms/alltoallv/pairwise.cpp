// Pairwise alltoallv: p-1 exchange steps; in step s each rank sends its block
// for one peer and receives the block from another (partner rank XOR s when p
// is a power of two, else rank+s and rank-s), one exchange in flight. The
// blocks' sizes come from each rank's own counts: empty blocks cost a step's
// wait and no message. For large or skewed exchanges, where flooding the
// network with every message at once hurts.
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/fold.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    b.copy(received_block(a, rank), sent_block(a, rank));
    if (p == 1) return;
    const bool xor_partners = is_power_of_two(p);

    std::vector<StepId> previous_step;
    for (int s = 1; s < p; ++s) {
        const int to = xor_partners ? rank ^ s : (rank + s) % p;
        const int from = xor_partners ? rank ^ s : (rank - s + p) % p;
        // Disjoint blocks leave the steps unordered: the explicit dependency
        // keeps one exchange in flight, as the algorithm intends.
        const StepId in = b.recv(from, received_block(a, from), previous_step);
        const StepId out = b.send(to, sent_block(a, to), previous_step);
        previous_step = {in, out};
    }
}

}  // namespace

extern const AlgorithmInfo kAlltoallvPairwise = {
    Collective::alltoallv,
    "pairwise",
    "p-1 steps, each exchanging one block with one peer; keeps the network uncongested for large or skewed exchanges",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
