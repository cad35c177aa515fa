// Pairwise-exchange reduce-scatter: at step s each rank sends its contribution
// to block rank+s straight to that block's owner and adds in what rank-s sent
// for its own block. (p-1) alpha + (p-1)/p n beta + (p-1)/p n gamma; no
// forwarding, so every byte moves once, but p-1 rounds whatever the size.
#include <algorithm>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/phases.hpp"

namespace loom {
namespace {

// Steps whose messages may be outstanding at once: enough to hide latency,
// few enough to bound scratch and the requests a rank has in flight.
constexpr int kStepsInFlight = 4;

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    const BlockLayout blocks = reduce_scatter_blocks(a);
    const size_t mine = blocks.count(rank);
    const Slice result = output_slice(0, mine);
    b.copy(result, input_slice(blocks.offset(rank), mine));
    if (p == 1) return;

    // Each step in the window receives into its own buffer, so a receive waits
    // only for the reduction `window` steps back, never for a send.
    const int window = std::min(p - 1, kStepsInFlight);
    std::vector<Slice> landing;
    for (int i = 0; i < window; ++i) landing.push_back(b.scratch(mine));
    std::vector<StepId> reduced;  // per step, so sends can be throttled to the window
    for (int step = 1; step < p; ++step) {
        const int to = (rank + step) % p, from = (rank + p - step) % p;
        // Sends read only the input; holding step s back until step s-window has
        // been reduced keeps at most `window` steps of messages in flight.
        const std::vector<StepId> throttle =
            step > window ? std::vector<StepId>{reduced[step - 1 - window]} : std::vector<StepId>{};
        b.send(to, input_slice(blocks.offset(to), blocks.count(to)), throttle);
        const Slice incoming = landing[(step - 1) % window];
        b.recv(from, incoming);
        reduced.push_back(b.reduce(result, incoming));
    }
}

}  // namespace

extern const AlgorithmInfo kReduceScatterPairwise = {
    Collective::reduce_scatter,
    "pairwise",
    "p-1 pairwise exchanges, each contribution sent straight to its block's owner; for large messages and irregular counts",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/false};

extern const AlgorithmInfo kReduceScatterBlockPairwise = {
    Collective::reduce_scatter_block,
    "pairwise",
    "p-1 pairwise exchanges, each contribution sent straight to its block's owner; for large messages and irregular counts",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
