// Building the programs the cost model plays: one rank's, or many on the
// cores the process was given for it. At 16384 ranks building programs is
// most of a prediction's time, and builders share nothing.
#pragma once
#include <memory>
#include <vector>

#include "algorithms/algorithm.hpp"

namespace loom {

// Rank `rank`'s program; a vector collective that knows every rank's counts
// builds it from the rank's own (rank_args). Truncated past `step_limit`
// steps, as build_program says.
Program program_of(const AlgorithmInfo &algo, const CollArgs &args, const PlanKnobs &knobs, int rank,
                   size_t step_limit = 0);
// The programs of `ranks`, in their order, on up to set_program_build_threads() threads.
std::vector<std::unique_ptr<Program>> programs_of(const AlgorithmInfo &algo, const CollArgs &args,
                                                  const PlanKnobs &knobs, const std::vector<int> &ranks,
                                                  size_t step_limit = 0);
// 1 (the default): a communicator's selection starts no thread in the
// user's process; the tools (loom-plan, loom-info) give it the cores.
void set_program_build_threads(unsigned threads);

}  // namespace loom
