#include "select/program_builds.hpp"

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>

namespace loom {
namespace {
std::atomic<unsigned> build_threads{1};
}  // namespace

void set_program_build_threads(unsigned threads) { build_threads = std::max(1u, threads); }

Program program_of(const AlgorithmInfo &algo, const CollArgs &args, const PlanKnobs &knobs, int rank,
                   size_t step_limit) {
    return knows_every_ranks_counts(args) ? build_program(algo, rank_args(args, rank), knobs, rank, step_limit)
                                          : build_program(algo, args, knobs, rank, step_limit);
}

std::vector<std::unique_ptr<Program>> programs_of(const AlgorithmInfo &algo, const CollArgs &args,
                                                  const PlanKnobs &knobs, const std::vector<int> &ranks,
                                                  size_t step_limit) {
    std::vector<std::unique_ptr<Program>> out(ranks.size());
    std::atomic<size_t> next{0};
    const auto build_some = [&] {
        for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < ranks.size();)
            out[i] = std::make_unique<Program>(program_of(algo, args, knobs, ranks[i], step_limit));
    };
    const size_t threads = std::min<size_t>(ranks.size(), build_threads.load(std::memory_order_relaxed));
    std::vector<std::thread> helpers;
    for (size_t t = 1; t < threads; ++t) {
        try {
            helpers.emplace_back(build_some);
        } catch (const std::system_error &) {
            break;  // no thread to be had: this one builds the rest
        }
    }
    build_some();
    for (std::thread &h : helpers) h.join();
    return out;
}

}  // namespace loom
